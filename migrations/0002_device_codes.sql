-- `tapgate login`: the device authorization grant (RFC 8628). A terminal asks for a code, a
-- signed-in person approves it in a browser, and the terminal exchanges the code for an API key
-- that is created at that moment, in the approver's team, so no plaintext key is ever stored.
-- Codes belong to no team until someone approves or denies them.
CREATE TABLE device_codes (
  id                TEXT PRIMARY KEY,              -- dev_…, the audit log's subject
  device_code_hash  TEXT NOT NULL UNIQUE,          -- SHA-256 of the terminal's 256-bit secret
  user_code         TEXT NOT NULL UNIQUE,          -- 8 upper-case letters, stored without the dash
  client_name       TEXT NOT NULL,                 -- the terminal's host name; becomes the key's label
  ip_hash           TEXT NOT NULL,                 -- SHA-256 of the requesting IP, for the rate limit
  created_at        INTEGER NOT NULL,
  expires_at        INTEGER NOT NULL,
  last_polled_at    INTEGER,
  status            TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'approved', 'denied', 'consumed')),
  user_id           TEXT REFERENCES users(id),     -- who approved or denied
  team_id           TEXT REFERENCES teams(id),     -- their team: where the key is created
  decided_at        INTEGER,
  key_id            TEXT                           -- the key minted when the code was consumed
);
CREATE INDEX device_codes_ip ON device_codes(ip_hash, created_at);
CREATE INDEX device_codes_expiry ON device_codes(expires_at);
