/**
 * History retention as a use case, run by the Cron Trigger (`scheduled` in index.ts): each run
 * takes the teams pruned least recently and deletes, per team, D1's approvals and agent
 * sessions older than the team's `limits.retentionDays` (at most the server's ceiling). SessionGates prune their own resolved
 * rows on their alarms (store.ts); the audit log is kept whole.
 *
 * Owns: which teams a run takes and their cutoffs. Does not own: the SQL (`db/retention.ts`).
 */
import { ceilingsOf } from "../ceilings";
import { pruneTeamHistory, teamsToPrune } from "../db";
import { limitsOf } from "../policy";
import type { Env } from "../types";

/** Teams one run prunes (one D1 batch each, well under a run's subrequest limit). */
export const TEAMS_PER_RUN = 200;
const DAY_MS = 24 * 60 * 60 * 1000;

/** The moment before which a team keeps nothing (but its audit log). */
export function retentionCutoff(retentionDays: number, now: number): number {
  return now - retentionDays * DAY_MS;
}

/** One run at `now`: how many approvals and sessions went, over how many teams. */
export async function pruneHistory(env: Env, now: number, teams = TEAMS_PER_RUN) {
  const totals = { teams: 0, approvals: 0, sessions: 0 };
  // A team's retention is its own choice within the server's ceiling, also one stored before the ceiling was lowered.
  const ceiling = ceilingsOf(env).retentionDays;
  for (const team of await teamsToPrune(env.DB, teams)) {
    const cutoff = retentionCutoff(Math.min(limitsOf(team.policy).retentionDays, ceiling), now);
    const pruned = await pruneTeamHistory(env.DB, team.id, cutoff, now);
    totals.teams += 1;
    totals.approvals += pruned.approvals;
    totals.sessions += pruned.sessions;
  }
  return totals;
}
