-- Telegram cards: one row per card posted to a linked chat. A button's callback_data holds only
-- a short random key (Telegram allows 64 bytes: too few for an approval id and its requestHash);
-- the key's SHA-256 names this row, which holds the team, the approval and the full requestHash
-- the card showed. Deleted when the card is ended, or once past the request's expiry.
CREATE TABLE telegram_cards (
  key_hash TEXT PRIMARY KEY,
  team_id TEXT NOT NULL,
  approval_id TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  chat_id TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX telegram_cards_approval ON telegram_cards (team_id, approval_id);
CREATE INDEX telegram_cards_expiry ON telegram_cards (expires_at);
