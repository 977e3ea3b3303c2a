/**
 * The team policy as a use case: replace it (D1 with its audit event, before/after, in one
 * batch; then the chain and the open sessions). A change applies to requests opened from then on.
 *
 * Owns: the order of those steps. Does not own: the policy's shape and rules (`policy.ts`), the
 * SQL (`db/people.ts`), reaching the open sessions (the team's hub, `hub/sessions.ts`).
 */
import { setTeamPolicy } from "../db";
import { hubFor } from "../hub/api";
import type { TeamPolicy } from "../policy";
import type { Env } from "../types";
import { chainQueued } from "./audit";
import { auditEvents, userActor } from "./audit-events";

export async function changePolicy(env: Env, c: { teamId: string; userId: string; policy: TeamPolicy }) {
  const { teamId, policy } = c;
  const context = { teamId, actor: userActor(c.userId), at: Date.now() };
  await setTeamPolicy(env.DB, teamId, policy, (change) =>
    auditEvents.policyChanged(context, { ...change, after: policy }),
  );
  await chainQueued(env, teamId);
  // The hub hands it to every live session (the first 40 now, the rest from its alarm); a gate
  // that misses it still gets it, from the hub when it next reports, or at its next join.
  await hubFor(env, teamId).policyChanged();
}
