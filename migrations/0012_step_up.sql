-- Step-up for high-risk requests (docs/state-machine.md "Risk tiers").
-- The approval's tier and quorum as its gate fixed them, and the verified passkey assertions its
-- allows carried (JSON array, for GET /v1/approvals/:id/proof once the gate pruned the request).
ALTER TABLE approvals ADD COLUMN risk TEXT;
ALTER TABLE approvals ADD COLUMN quorum TEXT;
ALTER TABLE approvals ADD COLUMN step_ups TEXT;

-- Step-up challenges: single-use, short-lived, scoped to one person, team and approval. The
-- challenge is SHA-256 over the domain prefix, the approval id, its requestHash and `nonce`.
CREATE TABLE step_up_challenges (
  challenge     TEXT PRIMARY KEY,               -- base64url, as clientDataJSON.challenge carries it
  approval_id   TEXT NOT NULL,
  team_id       TEXT NOT NULL REFERENCES teams(id),
  user_id       TEXT NOT NULL REFERENCES users(id),
  request_hash  TEXT NOT NULL,
  nonce         TEXT NOT NULL,
  created_at    INTEGER NOT NULL,
  expires_at    INTEGER NOT NULL,
  used_at       INTEGER
);
CREATE INDEX step_up_challenges_expiry ON step_up_challenges(expires_at);
