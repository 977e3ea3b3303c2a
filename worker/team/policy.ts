/**
 * The team policy as a use case: replace it (D1, audit with before/after, then the open
 * sessions). A change applies to requests opened from then on.
 *
 * Owns: the order of those steps. Does not own: the policy's shape and rules (`policy.ts`), the
 * SQL (`db/people.ts`), which sessions are connected (the team's hub).
 */
import { setTeamPolicy } from "../db";
import type { TeamPolicy } from "../policy";
import { sessionGate } from "../session-gate";
import { hubFor } from "../team-hub";
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
  const update = { policy, version };
  const connected = await hubFor(env, teamId).policyChanged(teamId, update);
  // A gate that misses this still gets it: from the hub when it next reports, or at its next join.
  await Promise.allSettled(connected.map((id) => sessionGate(env, teamId, id).applyPolicy(teamId, update)));
}
