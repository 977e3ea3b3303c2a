-- The team's hub reads back its team's recent revocations (hub/revocations.ts), so a revocation
-- whose call to the hub failed still reaches it: by team and time, revoked keys only.
CREATE INDEX api_keys_revoked ON api_keys(team_id, revoked_at) WHERE revoked_at IS NOT NULL;
