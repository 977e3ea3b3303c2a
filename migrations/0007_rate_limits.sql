-- Rate limits of the unauthenticated routes (sign-up, sign-in, passkey options) and of invite
-- mail (worker/rate-limits.ts): fixed-window counters, one row per key and window. The key is an
-- HMAC (RATE_LIMIT_SECRET) of the bucket and its subject (an address or a client), so the table
-- names neither. Rows are swept once their window is over.
CREATE TABLE rate_limits (
  key           TEXT NOT NULL,
  window_start  INTEGER NOT NULL,
  expires_at    INTEGER NOT NULL,   -- window_start + the window's length
  hits          INTEGER NOT NULL,
  PRIMARY KEY (key, window_start)
);
CREATE INDEX rate_limits_expiry ON rate_limits(expires_at);
