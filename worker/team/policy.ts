/**
 * The team policy as a use case: replace it (D1 with its audit event, before/after, in one
 * batch; then the chain and the open sessions). A change applies to requests opened from then
 * on. The team's `limits` (quotas) are the owners' alone: a body without them keeps the current
 * ones, and anyone else who sends them must send them unchanged.
 *
 * Owns: the order of those steps and who may change the limits. Does not own: the policy's
 * shape and rules (`policy.ts`), the SQL (`db/people.ts`), reaching the open sessions (the
 * team's hub, `hub/sessions.ts`).
 */
import type { PolicyUpdate } from "../../sdk/src/human/policy";
import type { Role } from "../../sdk/src/human/roles";
import { ceilingsOf } from "../ceilings";
import { canonicalJson } from "../crypto";
import { getTeamPolicy, listMembers, setTeamPolicy } from "../db";
import { DomainError } from "../errors";
import { hubFor } from "../hub/api";
import { DEFAULT_POLICY, type TeamPolicy } from "../policy";
import type { Env } from "../types";
import { chainQueued } from "./audit";
import { auditEvents, userActor } from "./audit-events";

/** Only owners may change the team's limits. */
const LIMIT_ROLES: readonly Role[] = ["owner"];

export async function changePolicy(
  env: Env,
  c: { teamId: string; userId: string; role: Role; body: PolicyUpdate },
): Promise<TeamPolicy> {
  const { teamId } = c;
  checkCeilings(env, c.body);
  await checkEscalationMembers(env, teamId, c.body);
  const keepLimits = c.body.limits === undefined || (await unchangedLimits(env, c));
  const policy: TeamPolicy = { ...c.body, limits: c.body.limits ?? DEFAULT_POLICY.limits };
  const context = { teamId, actor: userActor(c.userId), at: Date.now() };
  const { after } = await setTeamPolicy(env.DB, teamId, policy, {
    keepLimits,
    audit: (change) => auditEvents.policyChanged(context, change),
  });
  await chainQueued(env, teamId);
  // The hub hands it to every live session (the first 40 now, the rest from its alarm); a gate
  // that misses it still gets it, from the hub when it next reports, or at its next join.
  await hubFor(env, teamId).policyChanged();
  return after;
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
