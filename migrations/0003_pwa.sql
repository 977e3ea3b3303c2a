-- The phone: passkeys, pairing a second device, and Web Push devices.

-- A credential registered during passkey sign-up waits here (JSON) until its mailed link is
-- confirmed, so the account exists only once the email is proven.
ALTER TABLE sign_in_links ADD COLUMN passkey TEXT;

CREATE TABLE passkey_credentials (
  id            TEXT PRIMARY KEY,              -- the credential id, base64url
  user_id       TEXT NOT NULL REFERENCES users(id),
  public_key    TEXT NOT NULL,                 -- COSE public key, base64url
  counter       INTEGER NOT NULL DEFAULT 0,    -- signature counter; 0 when the authenticator keeps none
  transports    TEXT NOT NULL DEFAULT '[]',    -- JSON array, handed back as hints to the browser
  device_name   TEXT,
  created_at    INTEGER NOT NULL,
  last_used_at  INTEGER
);
CREATE INDEX passkey_credentials_user ON passkey_credentials(user_id);

-- Single-use WebAuthn challenges (5 min). `user_id` binds a signed-in registration to its user;
-- `signup` holds the {email, name, team} of a passkey sign-up.
CREATE TABLE webauthn_challenges (
  id          TEXT PRIMARY KEY,
  challenge   TEXT NOT NULL,                   -- base64url of 32 random bytes
  purpose     TEXT NOT NULL CHECK (purpose IN ('register', 'login')),
  user_id     TEXT REFERENCES users(id),
  signup      TEXT,
  created_at  INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL,
  used_at     INTEGER
);
CREATE INDEX webauthn_challenges_expiry ON webauthn_challenges(expires_at);

-- "Add a phone": one-time tokens (5 min) that sign a second device in as the same user and team.
CREATE TABLE pairing_tokens (
  token_hash  TEXT PRIMARY KEY,                -- SHA-256 of the 256-bit token
  user_id     TEXT NOT NULL REFERENCES users(id),
  team_id     TEXT NOT NULL REFERENCES teams(id),
  created_at  INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL,
  used_at     INTEGER
);
CREATE INDEX pairing_tokens_expiry ON pairing_tokens(expires_at);

-- Web Push subscriptions. Re-registering the same endpoint updates its row.
CREATE TABLE devices (
  id            TEXT PRIMARY KEY,              -- dev_…
  team_id       TEXT NOT NULL REFERENCES teams(id),
  user_id       TEXT NOT NULL REFERENCES users(id),
  name          TEXT NOT NULL,
  endpoint      TEXT NOT NULL,
  p256dh        TEXT NOT NULL,                 -- base64url, 65-byte uncompressed P-256 point
  auth          TEXT NOT NULL,                 -- base64url, 16 bytes
  user_agent    TEXT,
  created_at    INTEGER NOT NULL,
  last_seen_at  INTEGER,
  UNIQUE (team_id, user_id, endpoint)
);
CREATE INDEX devices_user ON devices(user_id);
