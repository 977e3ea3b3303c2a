-- Web sessions a person can see and end, idle expiry, and a recent-sign-in check (docs/limits.md).
-- `id` names a session in the API (never its token or token hash); `signed_in_at` is the last
-- real sign-in on it (link, passkey, pairing), which adding or removing a passkey needs recent;
-- `user_agent` says which device it is.
ALTER TABLE web_sessions ADD COLUMN id TEXT;
ALTER TABLE web_sessions ADD COLUMN signed_in_at INTEGER;
ALTER TABLE web_sessions ADD COLUMN user_agent TEXT;
UPDATE web_sessions SET id = 'wss_' || lower(hex(randomblob(12))), signed_in_at = created_at;
CREATE UNIQUE INDEX web_sessions_id ON web_sessions(id);

-- Who was removed from which team, written in the same batch as the removal: removing again
-- finds it and finishes the job (keys, sockets, audit) instead of answering 404.
CREATE TABLE removed_members (
  team_id     TEXT NOT NULL REFERENCES teams(id),
  user_id     TEXT NOT NULL REFERENCES users(id),
  role        TEXT NOT NULL,
  left_team   INTEGER NOT NULL,
  removed_at  INTEGER NOT NULL,
  PRIMARY KEY (team_id, user_id)
);
