-- Guessing user codes (RFC 8628 §5.1): each signed-in user may miss only so many codes per
-- window. A lookup reserves a row here first and gives it back when the code is found, so
-- parallel guesses cannot slip past the limit.
CREATE TABLE device_code_misses (
  id       INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id  TEXT NOT NULL,
  at       INTEGER NOT NULL
);
CREATE INDEX device_code_misses_user ON device_code_misses(user_id, at);
