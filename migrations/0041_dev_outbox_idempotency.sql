-- The local mail outbox keeps one message per idempotency key, as the mail provider sends one.
ALTER TABLE dev_outbox ADD COLUMN idempotency_key TEXT;
CREATE UNIQUE INDEX dev_outbox_idempotency ON dev_outbox (idempotency_key) WHERE idempotency_key IS NOT NULL;
