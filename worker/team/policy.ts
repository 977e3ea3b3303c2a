/**
 * The team policy as a use case: replace it (D1 with its audit event, before/after, in one
 * batch; then the chain and the open sessions). A change applies to requests opened from then
 * on. The team's `limits` (quotas) are the owners' alone: a body without them keeps the current
 * ones, and anyone else who sends them must send them unchanged. A change that weakens the
 * policy (`policy-weakening.ts`) is an owner's alone, confirmed with their passkey over this very
 * change (`policy-step-up.ts`), audited with what it gave away, and mailed to every owner.
 *
 * Owns: the order of those steps and who may change the limits or weaken the policy. Does not
 * own: the policy's shape and rules (`policy.ts`), the SQL (`db/people.ts`), reaching the open
 * sessions (the team's hub, `hub/sessions.ts`).
 */
import type { AuthenticationResponseJSON } from "@simplewebauthn/server";
import type { PolicyUpdate } from "../../sdk/src/human/policy";
import type { Role } from "../../sdk/src/human/roles";
import { ceilingsOf } from "../ceilings";
import { canonicalJson } from "../crypto";
import { getTeamPolicy, listMembers, type PolicyChange, setTeamPolicy } from "../db";
import { REQUEST_BUDGET_MS, withDeadline } from "../deadline";
import { DomainError } from "../errors";
import { hubFor } from "../hub/api";
import { sendMail } from "../mail";
import { DEFAULT_POLICY, type TeamPolicy } from "../policy";
import { policyWeakenings, type Weakening } from "../policy-weakening";
import type { Env } from "../types";
import { chainQueued } from "./audit";
import { auditEvents, userActor } from "./audit-events";
import { assertLadderChannels } from "./channels";
import { assertMayWeaken, type PolicyConfirmation, verifyPolicyStepUp } from "./policy-step-up";
import type { RelyingParty } from "./step-up";

/** Only owners may change the team's limits. */
const LIMIT_ROLES: readonly Role[] = ["owner"];

export interface PolicyChanger {
  teamId: string;
  teamName: string;
  userId: string;
  name: string;
  role: Role;
}

export async function changePolicy(
  env: Env,
  c: PolicyChanger & {
    body: PolicyUpdate;
    stepUp?: { assertion: AuthenticationResponseJSON; relyingParty: RelyingParty } | undefined;
    /** The app's origin, for the owners' mail. */
    origin: string;
  },
): Promise<TeamPolicy> {
  const { teamId } = c;
  checkCeilings(env, c.body);
  await checkEscalationMembers(env, teamId, c.body);
  await assertLadderChannels(env, teamId, c.body.escalation);
  const keepLimits = c.body.limits === undefined || (await unchangedLimits(env, c));
  const policy: TeamPolicy = { ...c.body, limits: c.body.limits ?? DEFAULT_POLICY.limits };
  const confirmed = c.stepUp
    ? await verifyPolicyStepUp(env, c.stepUp.relyingParty, c, c.stepUp.assertion, c.body)
    : null;
  let weakened: Weakening[] = [];
  const context = { teamId, actor: userActor(c.userId), at: Date.now() };
  const change = await setTeamPolicy(env.DB, teamId, policy, {
    keepLimits,
    check: (attempt) => {
      weakened = policyWeakenings(attempt.before, attempt.after);
      if (weakened.length > 0) refuseUnconfirmed(c.role, weakened, confirmed);
    },
    audit: (attempt) =>
      auditEvents.policyChanged(context, {
        ...attempt,
        weakened: weakened.map((w) => w.setting),
        ...(confirmed && { confirmedWith: confirmed.credentialId }),
      }),
  });
  await chainQueued(env, teamId);
  // The hub hands it to every live session (the first 40 now, the rest from its alarm); a gate
  // that misses it still gets it, from the hub with its next request's admission (before the
  // request is held), when it next reports, or at its next join.
  // Bounded: past it the change stands in D1 and the owners are still mailed of a weakening, but
  // the route answers 503 so the caller sends it again (which tells the hub again).
  const late = await withDeadline(hubFor(env, teamId).policyChanged(), REQUEST_BUDGET_MS, "hub.policyChanged").then(
    () => null,
    (error: unknown) => error,
  );
  if (weakened.length > 0) await mailOwners(env, c, weakened, change);
  if (late) throw late;
  return change.after;
}

/** A weakening: an owner's, with their passkey over this change (else 403 `forbidden` / `step_up_required`). */
function refuseUnconfirmed(role: Role, weakened: Weakening[], confirmed: PolicyConfirmation | null): void {
  assertMayWeaken(role);
  if (confirmed) return;
  const what = weakened.map((w) => w.says).join(", ");
  throw new DomainError(
    "step_up_required",
    `this change ${what}: confirm it with your passkey (POST /v1/policy/step-up), then send it again with stepUp`,
    { extra: { weakens: weakened.map((w) => w.setting) } },
  );
}

/** Tells every owner that the policy was weakened, by whom and how; a mail that fails does not undo the change. */
async function mailOwners(
  env: Env,
  c: PolicyChanger & { origin: string },
  weakened: Weakening[],
  change: PolicyChange,
) {
  const owners = (await listMembers(env.DB, c.teamId)).filter((m) => m.role === "owner");
  const link = `${c.origin}/policy`;
  const text = [
    `${c.name} changed the policy of ${c.teamName} on Tapgate (version ${change.version}), confirmed with their passkey. The change:`,
    ...weakened.map((w) => `- ${w.says}`),
    "",
    `Before and after are in the team's audit log. If you did not expect this, review the policy: ${link}`,
  ].join("\n");
  // Switching private mode is confirmed like a weakening, but either way it is no weakening to announce.
  const onlyPrivacy = weakened.every((w) => w.setting === "privacy");
  const subject = onlyPrivacy
    ? `Private mode was turned ${change.after.privacy === "private" ? "on" : "off"} for ${c.teamName} on Tapgate`
    : `The Tapgate policy of ${c.teamName} was weakened`;
  await Promise.all(
    owners.map((o) =>
      sendMail(env, { to: o.email, subject, text, link }).catch((e: unknown) =>
        console.error("policy mail failed", e instanceof Error ? e.name : ""),
      ),
    ),
  );
}

/** Owners choose limits within the server's ceilings (`400 over_ceiling {limit, ceiling}`). */
function checkCeilings(env: Env, body: PolicyUpdate): void {
  const ceiling = ceilingsOf(env).retentionDays;
  if (body.limits === undefined || body.limits.retentionDays <= ceiling) return;
  throw new DomainError("over_ceiling", `limits.retentionDays: this server keeps history at most ${ceiling} days`, {
    extra: { limit: "retentionDays", ceiling },
  });
}

/** An escalation step naming members names this team's members only (400 naming the field). */
async function checkEscalationMembers(env: Env, teamId: string, body: PolicyUpdate): Promise<void> {
  const named = body.escalation.flatMap((step, i) =>
    Array.isArray(step.to) ? step.to.map((id, j) => ({ id, i, j })) : [],
  );
  if (named.length === 0) return;
  const members = new Set((await listMembers(env.DB, teamId)).map((m) => m.userId));
  const stranger = named.find((n) => !members.has(n.id));
  if (!stranger) return;
  const path = ["escalation", stranger.i, "to", stranger.j];
  throw new DomainError("invalid_request", `escalation[${stranger.i}].to[${stranger.j}]: not a member of this team`, {
    extra: { issues: [{ code: "custom", path, message: "not a member of this team" }] },
  });
}

/** True when a non-owner sent the current limits back; throws when they would change them. */
async function unchangedLimits(env: Env, c: { teamId: string; role: Role; body: PolicyUpdate }): Promise<boolean> {
  if (LIMIT_ROLES.includes(c.role)) return false;
  const { policy } = await getTeamPolicy(env.DB, c.teamId);
  if (canonicalJson(policy.limits) === canonicalJson(c.body.limits)) return true;
  throw new DomainError("forbidden", "only owners may change the team's limits");
}
