-- A stopped session (POST /v1/sessions/:id/stop): JSON {by: {userId, name}, at, reason}, NULL while
-- it is not stopped. The session's gate is the source of truth and writes this through its outbox.
ALTER TABLE agent_sessions ADD COLUMN stopped TEXT;
