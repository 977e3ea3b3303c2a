-- A subagent's session names its parent session (JSON: {sessionId, title?, name?, task?}), so the
-- dashboard shows it under the parent. NULL for every other session.
ALTER TABLE agent_sessions ADD COLUMN parent TEXT;
