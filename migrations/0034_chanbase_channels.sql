-- Outside channels (worker/channels/, docs/guides/channels.md). Times are Unix epoch milliseconds.

-- What a team connected: one row per team and channel. `config` is sealed JSON (secret-box.ts:
-- a bot token, a routing key), never plaintext. `external_id`: the Slack workspace id, else NULL.
-- `target`: a Slack channel id the admin picked, or NULL (direct messages).
CREATE TABLE channel_installs (
  team_id      TEXT NOT NULL REFERENCES teams(id),
  channel      TEXT NOT NULL CHECK (channel IN ('slack', 'telegram', 'pagerduty')),
  external_id  TEXT,
  config       TEXT NOT NULL,
  target       TEXT,
  created_by   TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  PRIMARY KEY (team_id, channel),
  UNIQUE (channel, external_id)
);

-- A member's account on a platform: who they are there and where to post to them (a DM or chat id).
CREATE TABLE channel_links (
  team_id           TEXT NOT NULL REFERENCES teams(id),
  user_id           TEXT NOT NULL REFERENCES users(id),
  channel           TEXT NOT NULL CHECK (channel IN ('slack', 'telegram')),
  external_user_id  TEXT NOT NULL,
  address           TEXT NOT NULL,
  linked_at         INTEGER NOT NULL,
  PRIMARY KEY (team_id, user_id, channel),
  UNIQUE (team_id, channel, external_user_id)
);

-- One-time link codes (10 minutes), stored only as SHA-256 hex hashes.
CREATE TABLE channel_link_codes (
  code_hash   TEXT PRIMARY KEY,
  team_id     TEXT NOT NULL REFERENCES teams(id),
  user_id     TEXT NOT NULL REFERENCES users(id),
  channel     TEXT NOT NULL,
  expires_at  INTEGER NOT NULL
);
CREATE INDEX channel_link_codes_member ON channel_link_codes(team_id, user_id);

-- A platform account whose member left the team: a tap from it is told "You are no longer in
-- this team" rather than "Link your account first". Gone when the account is linked again.
CREATE TABLE channel_removed_links (
  team_id           TEXT NOT NULL,
  channel           TEXT NOT NULL,
  external_user_id  TEXT NOT NULL,
  user_id           TEXT NOT NULL,
  PRIMARY KEY (team_id, channel, external_user_id)
);

-- A member removed from a team (or a team deleted) keeps no link, code or install there.
CREATE TRIGGER channel_links_member_removed AFTER DELETE ON memberships BEGIN
  INSERT OR REPLACE INTO channel_removed_links (team_id, channel, external_user_id, user_id)
    SELECT team_id, channel, external_user_id, user_id FROM channel_links
     WHERE team_id = OLD.team_id AND user_id = OLD.user_id;
  DELETE FROM channel_links WHERE team_id = OLD.team_id AND user_id = OLD.user_id;
  DELETE FROM channel_link_codes WHERE team_id = OLD.team_id AND user_id = OLD.user_id;
END;
CREATE TRIGGER channel_rows_team_deleted BEFORE DELETE ON teams BEGIN
  DELETE FROM channel_links WHERE team_id = OLD.id;
  DELETE FROM channel_removed_links WHERE team_id = OLD.id;
  DELETE FROM channel_link_codes WHERE team_id = OLD.id;
  DELETE FROM channel_installs WHERE team_id = OLD.id;
END;
