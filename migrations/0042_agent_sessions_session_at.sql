-- When the session's gate wrote the session's state last (its `session` outbox op's time): an
-- older op replayed late (a dead letter, a row set aside) does not overwrite a newer one.
ALTER TABLE agent_sessions ADD COLUMN session_at INTEGER;
