-- Tapgate schema. Every row that belongs to a team carries team_id; every query is scoped by
-- the team taken from authentication. Times are Unix epoch milliseconds. Secrets are stored
-- only as SHA-256 hex hashes.

CREATE TABLE teams (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  policy      TEXT NOT NULL DEFAULT '{}',  -- JSON, see worker/policy.ts for defaults
  created_at  INTEGER NOT NULL
);

CREATE TABLE users (
  id          TEXT PRIMARY KEY,
  email       TEXT NOT NULL UNIQUE,        -- lower-cased
  name        TEXT NOT NULL,
  created_at  INTEGER NOT NULL
);

CREATE TABLE memberships (
  team_id     TEXT NOT NULL REFERENCES teams(id),
  user_id     TEXT NOT NULL REFERENCES users(id),
  role        TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'approver', 'viewer')),
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (team_id, user_id)
);
CREATE INDEX memberships_user ON memberships(user_id);

-- One row per signed-in browser. `method` names how it signed in (email_link; passkey later).
CREATE TABLE web_sessions (
  token_hash    TEXT PRIMARY KEY,
  user_id       TEXT NOT NULL REFERENCES users(id),
  team_id       TEXT NOT NULL REFERENCES teams(id),
  method        TEXT NOT NULL,
  created_at    INTEGER NOT NULL,
  expires_at    INTEGER NOT NULL,
  last_seen_at  INTEGER NOT NULL
);
CREATE INDEX web_sessions_user ON web_sessions(user_id);

-- One-time email links: sign-up (creates user and team) or sign-in.
CREATE TABLE sign_in_links (
  token_hash  TEXT PRIMARY KEY,
  purpose     TEXT NOT NULL CHECK (purpose IN ('signup', 'signin')),
  email       TEXT NOT NULL,
  name        TEXT,
  team_name   TEXT,
  created_at  INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL,
  used_at     INTEGER
);

CREATE TABLE api_keys (
  id            TEXT PRIMARY KEY,
  team_id       TEXT NOT NULL REFERENCES teams(id),
  user_id       TEXT NOT NULL REFERENCES users(id),
  key_hash      TEXT NOT NULL UNIQUE,
  prefix        TEXT NOT NULL,
  label         TEXT NOT NULL,
  created_at    INTEGER NOT NULL,
  last_used_at  INTEGER,
  revoked_at    INTEGER
);
CREATE INDEX api_keys_team ON api_keys(team_id, user_id);

CREATE TABLE agent_sessions (
  team_id          TEXT NOT NULL REFERENCES teams(id),
  session_id       TEXT NOT NULL,
  owner_user_id    TEXT NOT NULL REFERENCES users(id),
  title            TEXT,
  agent            TEXT,                   -- JSON {name, version?}
  host             TEXT,
  cwd              TEXT,
  connected_at     INTEGER,
  disconnected_at  INTEGER,
  last_seen_at     INTEGER NOT NULL,
  PRIMARY KEY (team_id, session_id)
);

-- Which keys have opened which sessions, so revoking a key reaches its sockets.
CREATE TABLE agent_session_keys (
  team_id     TEXT NOT NULL,
  key_id      TEXT NOT NULL REFERENCES api_keys(id),
  session_id  TEXT NOT NULL,
  PRIMARY KEY (key_id, session_id)
);

-- The index and history of approvals. The SessionGate Durable Object is the source of truth;
-- it writes here from its outbox after the agent has its answer.
CREATE TABLE approvals (
  id             TEXT PRIMARY KEY,
  team_id        TEXT NOT NULL REFERENCES teams(id),
  session_id     TEXT NOT NULL,
  owner_user_id  TEXT NOT NULL,
  state          TEXT NOT NULL CHECK (state IN ('pending', 'allowed', 'denied', 'cancelled', 'expired')),
  reason         TEXT,
  snapshot       TEXT NOT NULL,            -- JSON shown to humans
  request_hash   TEXT NOT NULL,
  options        TEXT NOT NULL,            -- JSON, offered after team policy
  tool_title     TEXT,
  tool_kind      TEXT,
  created_at     INTEGER NOT NULL,
  expires_at     INTEGER NOT NULL,
  resolved_at    INTEGER,
  decided_by     TEXT,                     -- JSON {userId, name, device}
  option_id      TEXT
);
CREATE INDEX approvals_team_state ON approvals(team_id, state, created_at DESC, id DESC);
CREATE INDEX approvals_team_owner ON approvals(team_id, owner_user_id, created_at DESC, id DESC);

-- Append-only: rows are inserted, never updated or deleted. `event_id` makes replays idempotent.
CREATE TABLE audit_log (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id    TEXT NOT NULL UNIQUE,
  team_id     TEXT NOT NULL,
  at          INTEGER NOT NULL,
  actor       TEXT NOT NULL,               -- user:<id> | key:<id> | system
  action      TEXT NOT NULL,
  subject     TEXT,
  detail      TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_team ON audit_log(team_id, seq);
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
  BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
  BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;

-- Local mode only (DEV_OUTBOX): mail that would have been sent. Production never writes here.
CREATE TABLE dev_outbox (
  seq       INTEGER PRIMARY KEY AUTOINCREMENT,
  recipient TEXT NOT NULL,
  subject   TEXT NOT NULL,
  body      TEXT NOT NULL,
  link      TEXT,
  sent_at   INTEGER NOT NULL
);
