/**
 * The team policy as a use case: replace it (D1, audit with before/after, then the open
 * sessions). A change applies to requests opened from then on.
 *
 * Owns: the order of those steps. Does not own: the policy's shape and rules (`policy.ts`), the
 * SQL (`db/people.ts`), reaching the open sessions (the team's hub, `hub/sessions.ts`).
 */
import { setTeamPolicy } from "../db";
import { hubFor } from "../hub/api";
import type { TeamPolicy } from "../policy";
import type { Env } from "../types";
import { appendAudit } from "./audit";
import { auditEvents, userActor } from "./audit-events";

export async function changePolicy(env: Env, c: { teamId: string; userId: string; policy: TeamPolicy }) {
  const { teamId, policy } = c;
  const { before, version } = await setTeamPolicy(env.DB, teamId, policy);
  await appendAudit(
    env,
    auditEvents.policyChanged(
      { teamId, actor: userActor(c.userId), at: Date.now() },
      { before, after: policy, version },
    ),
  );
  // The hub hands it to every live session (the first 40 now, the rest from its alarm); a gate
  // that misses it still gets it, from the hub when it next reports, or at its next join.
  await hubFor(env, teamId).policyChanged();
}
