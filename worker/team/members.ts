/**
 * Members and invites as use cases. Roles: owner > admin > approver > viewer. Nobody grants a
 * role above their own, only owners touch owners, and a team always keeps an owner (checked in
 * SQL, so two concurrent changes cannot both pass). Anyone may leave.
 *
 * Owns: the rank checks, and what a membership change must also reach: cached identities, the
 * hub's directory and sockets, the member's keys and devices, the audit log — and finishing a
 * removal again when it is repeated. Does not own: the SQL (`db/teams.ts`), mail (the route
 * sends the invite), who may call at all (route middleware).
 */

import type { Role } from "../../sdk/src/human/roles";
import { forgetWebSession } from "../auth";
import { ceilingsOf, overCeiling } from "../ceilings";
import { newId, randomToken, sha256Hex } from "../crypto";
import {
  acceptInvite as acceptInviteRow,
  createInvite,
  findMember,
  findRemoval,
  keysRevokedByRemoval,
  type MemberRow,
  type Removal,
  removeMember as removeMemberRows,
  revokeInvite as revokeInviteRow,
  setMemberRole,
  webSessionHashes,
} from "../db";
import { REQUEST_BUDGET_MS, waitAtMost, withDeadline } from "../deadline";
import { DomainError } from "../errors";
import { closeWebSessionAtHub, hubFor } from "../hub/api";
import { ADMIN_ROLES, mayGrant, mayManage } from "../roles";
import type { Env, WebIdentity } from "../types";
import { appendAudit, chainQueued } from "./audit";
import { type AuditContext, auditEvents, userActor } from "./audit-events";
import { revokeKey } from "./keys";
import { switchTeam } from "./teams";

const INVITE_TTL_MS = 7 * 24 * 60 * 60 * 1000;

const noMember = () => new DomainError("not_found", "no such member");
const lastOwner = () => new DomainError("last_owner", "a team always keeps an owner: make someone else owner first");
const outranked = (w: WebIdentity) =>
  new DomainError("forbidden", `your role (${w.role}) may not do this to that member or grant that role`);
const badInvite = () => new DomainError("not_found", "this invite is invalid, used or expired");

const byUser = (w: WebIdentity, at = Date.now()): AuditContext => ({
  teamId: w.teamId,
  actor: userActor(w.userId),
  at,
});

/**
 * Roles decide who gets pushed and may decide: the team's hub reads them again. A hub that does
 * not answer in time: `503` (the change stands in D1, and sending it again tells the hub again;
 * meanwhile the hub vouches for decisions from D1 within VOUCH_DIRECTORY_MS and addresses pushes
 * from it within DIRECTORY_MAX_AGE_MS).
 */
async function membersChanged(env: Env, teamId: string): Promise<void> {
  await withDeadline(hubFor(env, teamId).forgetDirectory(), REQUEST_BUDGET_MS, "hub.forgetDirectory");
}

/** A new invite (its token is shown once, as a link); 403 for a role above the inviter's. */
export async function inviteMember(env: Env, w: WebIdentity, i: { role: Role; email: string | null }) {
  if (!mayGrant(w.role, i.role)) throw outranked(w);
  const token = randomToken();
  const id = newId("inv");
  const now = Date.now();
  await createInvite(
    env.DB,
    {
      id,
      teamId: w.teamId,
      tokenHash: sha256Hex(token),
      role: i.role,
      email: i.email,
      createdBy: w.userId,
      now,
      ttlMs: INVITE_TTL_MS,
    },
    auditEvents.memberInvited(byUser(w, now), { inviteId: id, ...i }),
  );
  await chainQueued(env, w.teamId);
  return { id, token, expiresAt: now + INVITE_TTL_MS };
}

export async function revokeInvite(env: Env, w: WebIdentity, inviteId: string): Promise<void> {
  const now = Date.now();
  const revoked = await revokeInviteRow(
    env.DB,
    { teamId: w.teamId, id: inviteId, now },
    auditEvents.inviteRevoked(byUser(w, now), inviteId),
  );
  if (!revoked) throw new DomainError("not_found", "no such invite");
  await chainQueued(env, w.teamId);
}

/** Joins the invite's team and moves the caller's web session there. */
export async function acceptInvite(env: Env, w: WebIdentity, token: string) {
  const now = Date.now();
  const memberCeiling = ceilingsOf(env).membersPerTeam;
  const row = { tokenHash: sha256Hex(token), userId: w.userId, now, memberCeiling };
  const accepted = await acceptInviteRow(env.DB, row, (i) =>
    auditEvents.memberJoined({ teamId: i.teamId, actor: userActor(w.userId), at: now }, { userId: w.userId, ...i }),
  );
  if (accepted.outcome === "team_full") throw overCeiling("membersPerTeam", memberCeiling, "members per team");
  if (accepted.outcome === "already_member") {
    throw new DomainError("already_member", "you are already a member of that team");
  }
  if (accepted.outcome === "other_address") {
    throw new DomainError(
      "invite_for_other_address",
      "this invite is for another email address; sign in with that one",
    );
  }
  if (accepted.outcome !== "joined") throw badInvite();
  const { teamId, role } = accepted;
  // A join only adds: a hub that misses it reads the newcomer from D1 within its copy's maximum
  // age, so the join goes on (a 503 here would leave it half done, its retry `already_member`).
  await waitAtMost(hubFor(env, teamId).forgetDirectory(), REQUEST_BUDGET_MS, "hub.forgetDirectory");
  await chainQueued(env, teamId);
  await switchTeam(env, w, teamId);
  return { teamId, role };
}

export async function changeRole(env: Env, w: WebIdentity, userId: string, role: Role): Promise<MemberRow> {
  const target = await findMember(env.DB, w.teamId, userId);
  if (!target) throw noMember();
  if (!mayManage(w.role, target.role) || !mayGrant(w.role, role)) throw outranked(w);
  const audit = auditEvents.memberRoleChanged(byUser(w), { userId: target.userId, before: target.role, after: role });
  if (!(await setMemberRole(env.DB, { teamId: w.teamId, userId: target.userId, role }, audit))) throw lastOwner();
  // Cached identities carry the old role: in this isolate the new one applies at once.
  for (const hash of await webSessionHashes(env.DB, w.teamId, target.userId)) forgetWebSession(hash);
  await membersChanged(env, w.teamId);
  await chainQueued(env, w.teamId);
  return { ...target, role };
}

/**
 * Removes a member (or the caller leaves): their web sessions end, their sockets close, their
 * devices go, and their keys are revoked (in D1 at once, in one batch with the removal) with
 * their pending requests; its audit event is queued in that batch too. Removing someone already
 * removed is the same success: an administrator's retry redoes everything after the batch
 * (sockets, sessions told, chaining the event), so a removal that failed half-way is finished
 * rather than answered 404, and still records one event.
 */
export async function removeMember(env: Env, w: WebIdentity, userId: string): Promise<void> {
  const target = await findMember(env.DB, w.teamId, userId);
  if (!target) return finishRemovalAgain(env, w, userId);
  const leaving = target.userId === w.userId;
  if (!leaving && !mayManage(w.role, target.role)) throw refused(w);
  const now = Date.now();
  // The batch fills in the role and the keys it revoked as it found them.
  const audit = removedEvent(w, target.userId, { role: target.role, left: leaving, removedAt: now }, 0);
  const removed = await removeMemberRows(
    env.DB,
    { teamId: w.teamId, userId: target.userId, left: leaving, now },
    audit,
  );
  if (!removed) throw lastOwner();
  for (const tokenHash of removed.tokenHashes) forgetWebSession(tokenHash);
  const hub = hubFor(env, w.teamId);
  // Ended at the hub too, so a quick re-invite does not bring a removed session back. One that
  // fails keeps nothing else from running (the directory, the keys): the route answers after (503 service_unavailable when the hub was late).
  const endedAtHub = await Promise.allSettled([
    ...removed.deviceIds.map((id) => withDeadline(hub.deviceRemoved(id), REQUEST_BUDGET_MS, "hub.deviceRemoved")),
    ...removed.tokenHashes.map((tokenHash) => closeWebSessionAtHub(env, w.teamId, tokenHash)),
  ]);
  await finishRemoval(env, w, target.userId, removed.removal);
  await chainQueued(env, w.teamId);
  const failed = endedAtHub.find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
}

/** Audited under the removal's time, so the same removal always makes the same event id. */
const removedEvent = (w: WebIdentity, userId: string, r: Removal, revokedKeys: number) =>
  auditEvents.memberRemoved(byUser(w, r.removedAt), { userId, role: r.role, left: r.left, revokedKeys });

const refused = (w: WebIdentity) =>
  ADMIN_ROLES.includes(w.role) ? outranked(w) : new DomainError("forbidden", `your role (${w.role}) may not do this`);

/** A retry on someone no longer a member: 404 unless they were removed from this team. */
async function finishRemovalAgain(env: Env, w: WebIdentity, userId: string): Promise<void> {
  const removal = await findRemoval(env.DB, w.teamId, userId);
  if (!removal) throw noMember();
  if (!mayManage(w.role, removal.role)) throw refused(w);
  const keyIds = await finishRemoval(env, w, userId, removal);
  // Queued again for a removal whose batch did not carry it (made before it did): else a replay, ignored.
  await appendAudit(env, removedEvent(w, userId, removal, keyIds.length));
}

/** Everything after the removal's batch (which queued its audit event); each step may run again. */
async function finishRemoval(env: Env, w: WebIdentity, userId: string, removal: Removal): Promise<string[]> {
  const hub = hubFor(env, w.teamId);
  const actor = userActor(w.userId);
  const keyIds = await keysRevokedByRemoval(env.DB, { teamId: w.teamId, userId, removedAt: removal.removedAt });
  // The hub's directory drops them even if a key's revocation fails: it vouches for decisions.
  // Each runs to its end before the route answers (the first failure, as a 503 when late).
  const steps = await Promise.allSettled([
    withDeadline(hub.closeSocketsOf(userId), REQUEST_BUDGET_MS, "hub.closeSocketsOf"),
    membersChanged(env, w.teamId),
    ...keyIds.map((keyId) => revokeKey(env, { teamId: w.teamId, userId, keyId, actor })),
  ]);
  const failed = steps.find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
  return keyIds;
}
