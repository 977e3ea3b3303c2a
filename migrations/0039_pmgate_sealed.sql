-- Private mode (docs/threat-model.md "Private mode"): a sealed request's envelope (JSON
-- `SealedRequest`: ciphertext, per-device key wraps, requestHash, tier, fingerprint), written by
-- the gate's outbox with the approval; null for every standard request. The row's snapshot then
-- holds no content: only the placeholder tool call and the session's title, agent and host.
ALTER TABLE approvals ADD COLUMN sealed TEXT;
