/**
 * D1 access: pruning a team's history past its retention (`limits.retentionDays`). Approvals
 * go once their time is over (created and expired before the cutoff, whatever their state);
 * agent sessions once they were last seen before it and no approval of theirs is left. The
 * audit log is never pruned: it is append-only and its hash chain must verify from its start.
 */
import { parsePolicy, type TeamPolicy } from "../policy";

/** Rows of each kind one run deletes per team at most: a team with a backlog catches up run by run. */
export const PRUNE_ROWS_PER_TEAM = 2_000;

export interface TeamToPrune {
  id: string;
  policy: TeamPolicy;
}

/** The teams pruned least recently, first. */
export async function teamsToPrune(db: D1Database, limit: number): Promise<TeamToPrune[]> {
  const { results } = await db
    .prepare("SELECT id, policy FROM teams ORDER BY pruned_at, id LIMIT ?")
    .bind(limit)
    .all<{ id: string; policy: string }>();
  return results.map((r) => ({ id: r.id, policy: parsePolicy(r.policy) }));
}

/** Deletes the team's history from before `cutoff` (one batch) and notes the run; how many rows went. */
export async function pruneTeamHistory(
  db: D1Database,
  teamId: string,
  cutoff: number,
  now: number,
): Promise<{ approvals: number; sessions: number }> {
  const oldSessions = `SELECT s.session_id FROM agent_sessions s
     WHERE s.team_id = ?1 AND s.last_seen_at < ?2
       AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.team_id = s.team_id AND a.session_id = s.session_id)
     LIMIT ?3`;
  const [approvals, , sessions] = await db.batch([
    db
      .prepare(
        `DELETE FROM approvals WHERE id IN (SELECT id FROM approvals
           WHERE team_id = ?1 AND created_at < ?2 AND expires_at < ?2 LIMIT ?3)`,
      )
      .bind(teamId, cutoff, PRUNE_ROWS_PER_TEAM),
    db
      .prepare(`DELETE FROM agent_session_keys WHERE team_id = ?1 AND session_id IN (${oldSessions})`)
      .bind(teamId, cutoff, PRUNE_ROWS_PER_TEAM),
    db
      .prepare(`DELETE FROM agent_sessions WHERE team_id = ?1 AND session_id IN (${oldSessions})`)
      .bind(teamId, cutoff, PRUNE_ROWS_PER_TEAM),
    db.prepare("UPDATE teams SET pruned_at = ?2 WHERE id = ?1").bind(teamId, now),
  ]);
  return { approvals: approvals?.meta.changes ?? 0, sessions: sessions?.meta.changes ?? 0 };
}
