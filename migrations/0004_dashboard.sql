-- The team dashboard: a tamper-evident audit chain, invites, policy versions, and indexes for
-- history, sessions and stats.

-- Each entry stores the SHA-256 (hex) of the team's previous entry and of its own canonical
-- content (worker/audit-chain.ts). Rows from before this migration keep NULL: the chain starts
-- after them, from 64 zeros. Only the team's TeamHub appends (see TeamHub.appendAudit).
ALTER TABLE audit_log ADD COLUMN prev_hash TEXT;
ALTER TABLE audit_log ADD COLUMN hash TEXT;

-- Bumped by every policy change, so a SessionGate never swaps a newer policy for an older one
-- (pushes from the hub and reads at join can arrive in either order).
ALTER TABLE teams ADD COLUMN policy_version INTEGER NOT NULL DEFAULT 0;

-- One-time invite links (7 days). Only the token's SHA-256 is stored.
CREATE TABLE invites (
  id          TEXT PRIMARY KEY,                -- inv_…
  team_id     TEXT NOT NULL REFERENCES teams(id),
  token_hash  TEXT NOT NULL UNIQUE,
  role        TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'approver', 'viewer')),
  email       TEXT,
  created_by  TEXT NOT NULL REFERENCES users(id),
  created_at  INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL,
  used_at     INTEGER,
  used_by     TEXT REFERENCES users(id),
  revoked_at  INTEGER
);
CREATE INDEX invites_team ON invites(team_id, created_at DESC);

-- History filters by session and by resolution time; stats group by creation day.
CREATE INDEX approvals_team_session ON approvals(team_id, session_id, created_at);
CREATE INDEX approvals_team_created ON approvals(team_id, created_at);
CREATE INDEX agent_sessions_team_seen ON agent_sessions(team_id, last_seen_at DESC);
CREATE INDEX web_sessions_user_team ON web_sessions(user_id, team_id);
