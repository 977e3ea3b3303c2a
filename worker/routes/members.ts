/**
 * Members and invites. Roles: owner > admin > approver > viewer. Owners and admins invite,
 * change roles and remove members; nobody grants a role above their own, only owners touch
 * owners, and a team always keeps an owner. Anyone may leave.
 */
import { type Context, Hono } from "hono";
import { z } from "zod";
import { forgetWebSession, requireRole, requireSameOrigin, requireWeb } from "../auth";
import { newId, randomBase62, randomToken, sha256Hex } from "../crypto";
import {
  acceptInvite,
  audit,
  createInvite,
  findMember,
  listInvites,
  listMembers,
  previewInvite,
  removeMember,
  revokeInvite,
  setMemberRole,
  webSessionHashes,
} from "../db";
import { apiError, appOrigin, validate } from "../http";
import { hubFor } from "../hub/api";
import { deliverMail } from "../mail";
import { ADMIN_ROLES, mayGrant, mayManage } from "../roles";
import { type AppEnv, type Env, ROLES, type WebIdentity } from "../types";
import { revokeKey } from "./keys";
import { switchTo } from "./teams";

const INVITE_TTL_MS = 7 * 24 * 60 * 60 * 1000;

const role = z.enum(ROLES);
const inviteBody = z.object({
  role,
  email: z
    .email()
    .max(254)
    .transform((e) => e.toLowerCase())
    .optional(),
});
const tokenField = z.string().regex(/^[A-Za-z0-9_-]{43}$/, "not an invite token");
const inviteParam = z.object({ id: z.string().regex(/^inv_[0-9A-Za-z]{22}$/, "not an invite id") });
const memberParam = z.object({ userId: z.string().min(1).max(100) });

const noMember = (c: Context) => apiError(c, "not_found", "no such member");
const lastOwner = (c: Context) =>
  apiError(c, "last_owner", "a team always keeps an owner: make someone else owner first");
const outranked = (c: Context, w: WebIdentity) =>
  apiError(c, "forbidden", `your role (${w.role}) may not do this to that member or grant that role`);

export const memberRoutes = new Hono<AppEnv>()
  // Signed out on purpose: the invite page shows whom it is from before the invitee signs in.
  .get("/v1/invites/preview", validate("query", z.object({ token: tokenField })), async (c) => {
    const preview = await previewInvite(c.env.DB, sha256Hex(c.req.valid("query").token), Date.now());
    return preview ? c.json(preview) : apiError(c, "not_found", "this invite is invalid, used or expired");
  })
  .post(
    "/v1/invites/accept",
    requireWeb,
    requireSameOrigin,
    validate("json", z.object({ token: tokenField })),
    async (c) => {
      const w = c.get("web");
      const now = Date.now();
      const accepted = await acceptInvite(c.env.DB, {
        tokenHash: sha256Hex(c.req.valid("json").token),
        userId: w.userId,
        now,
      });
      if (accepted.outcome === "already_member") {
        return apiError(c, "already_member", "you are already a member of that team");
      }
      if (accepted.outcome !== "joined") return apiError(c, "not_found", "this invite is invalid, used or expired");
      await membersChanged(c.env, accepted.teamId);
      await audit(c.env, {
        eventId: `member_joined:${accepted.inviteId}`,
        teamId: accepted.teamId,
        at: now,
        actor: `user:${w.userId}`,
        action: "member.joined",
        subject: w.userId,
        detail: { inviteId: accepted.inviteId, role: accepted.role },
      });
      await switchTo(c, accepted.teamId);
      return c.json({ team: { id: accepted.teamId }, role: accepted.role });
    },
  )
  .use("/v1/invites", requireWeb, requireSameOrigin, requireRole(...ADMIN_ROLES))
  .use("/v1/invites/:id", requireWeb, requireSameOrigin, requireRole(...ADMIN_ROLES))
  .post("/v1/invites", validate("json", inviteBody), async (c) => {
    const w = c.get("web");
    const { role, email } = c.req.valid("json");
    if (!mayGrant(w.role, role)) return outranked(c, w);
    const token = randomToken();
    const id = newId("inv");
    const now = Date.now();
    await createInvite(c.env.DB, {
      id,
      teamId: w.teamId,
      tokenHash: sha256Hex(token),
      role,
      email: email ?? null,
      createdBy: w.userId,
      now,
      ttlMs: INVITE_TTL_MS,
    });
    await audit(c.env, {
      eventId: `member_invited:${id}`,
      teamId: w.teamId,
      at: now,
      actor: `user:${w.userId}`,
      action: "member.invited",
      subject: id,
      detail: { role, email: email ?? null },
    });
    const url = `${appOrigin(c)}/invite?token=${token}`;
    if (email) {
      await deliverMail(c, {
        to: email,
        subject: `${w.name} invited you to ${w.teamName} on Tapgate`,
        text: `${w.name} invited you to join ${w.teamName} on Tapgate as ${role}. The link works once, for 7 days:\n\n${url}\n\nIf you did not expect it, ignore this message.`,
        link: url,
      });
    }
    return c.json({ id, url, role, expiresAt: now + INVITE_TTL_MS }, 201);
  })
  .get("/v1/invites", async (c) => c.json({ invites: await listInvites(c.env.DB, c.get("web").teamId, Date.now()) }))
  .delete("/v1/invites/:id", validate("param", inviteParam), async (c) => {
    const w = c.get("web");
    const { id } = c.req.valid("param");
    const now = Date.now();
    if (!(await revokeInvite(c.env.DB, w.teamId, id, now))) return apiError(c, "not_found", "no such invite");
    await audit(c.env, {
      eventId: `invite_revoked:${id}`,
      teamId: w.teamId,
      at: now,
      actor: `user:${w.userId}`,
      action: "member.invite_revoked",
      subject: id,
    });
    return c.json({ ok: true, id });
  })
  .use("/v1/members", requireWeb)
  .use("/v1/members/*", requireWeb, requireSameOrigin)
  .get("/v1/members", async (c) => c.json({ members: await listMembers(c.env.DB, c.get("web").teamId) }))
  .patch(
    "/v1/members/:userId",
    requireRole(...ADMIN_ROLES),
    validate("param", memberParam),
    validate("json", z.object({ role })),
    async (c) => {
      const w = c.get("web");
      const target = await findMember(c.env.DB, w.teamId, c.req.valid("param").userId);
      if (!target) return noMember(c);
      const { role } = c.req.valid("json");
      if (!mayManage(w.role, target.role) || !mayGrant(w.role, role)) return outranked(c, w);
      if (!(await setMemberRole(c.env.DB, { teamId: w.teamId, userId: target.userId, role }))) return lastOwner(c);
      // Cached identities carry the old role: in this isolate the new one applies at once.
      for (const hash of await webSessionHashes(c.env.DB, w.teamId, target.userId)) forgetWebSession(hash);
      const now = Date.now();
      await membersChanged(c.env, w.teamId);
      await audit(c.env, {
        eventId: `member_role:${w.teamId}:${target.userId}:${now}:${randomBase62(8)}`,
        teamId: w.teamId,
        at: now,
        actor: `user:${w.userId}`,
        action: "member.role_changed",
        subject: target.userId,
        detail: { before: target.role, after: role },
      });
      return c.json({ ...target, role });
    },
  )
  .delete("/v1/members/:userId", validate("param", memberParam), async (c) => {
    const w = c.get("web");
    const target = await findMember(c.env.DB, w.teamId, c.req.valid("param").userId);
    if (!target) return noMember(c);
    const leaving = target.userId === w.userId;
    if (!leaving && !mayManage(w.role, target.role)) {
      return ADMIN_ROLES.includes(w.role)
        ? outranked(c, w)
        : apiError(c, "forbidden", `your role (${w.role}) may not do this`);
    }
    const removed = await removeMember(c.env.DB, { teamId: w.teamId, userId: target.userId });
    if (!removed) return lastOwner(c);
    const now = Date.now();
    const actor = `user:${w.userId}`;
    for (const tokenHash of removed.tokenHashes) forgetWebSession(tokenHash);
    const hub = hubFor(c.env, w.teamId);
    await Promise.all([
      hub.closeSocketsOf(target.userId),
      ...removed.deviceIds.map((id) => hub.deviceRemoved(id)),
      ...removed.keyIds.map((keyId) => revokeKey(c.env, { teamId: w.teamId, userId: target.userId, keyId, actor })),
    ]);
    await membersChanged(c.env, w.teamId);
    await audit(c.env, {
      eventId: `member_removed:${w.teamId}:${target.userId}:${now}`,
      teamId: w.teamId,
      at: now,
      actor,
      action: "member.removed",
      subject: target.userId,
      detail: { role: target.role, left: leaving, revokedKeys: removed.keyIds.length },
    });
    return c.json({ ok: true, userId: target.userId });
  });

/** Roles decide who gets pushed and may decide: the team's hub reads them again. */
async function membersChanged(env: Env, teamId: string): Promise<void> {
  await hubFor(env, teamId).forgetDirectory();
}
