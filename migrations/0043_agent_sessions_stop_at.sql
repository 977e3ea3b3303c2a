-- When the session's gate stopped or resumed it last (its `session_stop` outbox op's time): an
-- older stop replayed late (a dead letter) does not undo a newer resume, nor the reverse.
ALTER TABLE agent_sessions ADD COLUMN stop_at INTEGER;
