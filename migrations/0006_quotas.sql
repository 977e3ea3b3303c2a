-- Team quotas: history retention. A Cron Trigger (worker/team/retention.ts) prunes each team's
-- approvals and agent sessions older than its `limits.retentionDays`, the teams least recently
-- pruned first (through 0004's approvals_team_created and agent_sessions_team_seen indexes).
-- The audit log is never pruned (append-only, and its hash chain must verify from its start).

ALTER TABLE teams ADD COLUMN pruned_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX teams_pruned ON teams(pruned_at, id);
