-- Device keys (docs/human-api.md "Device keys", docs/threat-model.md "Private mode"): the public
-- HPKE key of a browser that may decide, endorsed by a passkey assertion of its person over the
-- team id and the key. Agents in a private team seal requests to these keys. Times are Unix
-- epoch milliseconds.
--
-- `device_id` is `dk_` + 32 hex of SHA-256 over the raw key (`deviceIdOf`): unique per team, so
-- one browser's key may be registered in each team its person belongs to, and someone who copies
-- a published key can squat it nowhere but in their own team. `web_session_id`: the sign-in
-- (`web_sessions.id`) that registered it; `push_device_id`: the push device of the same browser,
-- if any; `credential_id`: the passkey whose assertion endorses it (the endorsement names it too).
-- `endorsement` is JSON `{credentialId, credentialPublicKey, authenticatorData, clientDataJSON,
-- signature}`, all base64url, as `deviceKeyEndorsementSchema`.
CREATE TABLE device_keys (
  team_id         TEXT NOT NULL REFERENCES teams(id),
  device_id       TEXT NOT NULL,
  user_id         TEXT NOT NULL REFERENCES users(id),
  web_session_id  TEXT NOT NULL,
  push_device_id  TEXT,
  credential_id   TEXT NOT NULL,
  public_key      TEXT NOT NULL,
  endorsement     TEXT NOT NULL,
  name            TEXT NOT NULL,
  created_at      INTEGER NOT NULL,
  PRIMARY KEY (team_id, device_id)
);
CREATE INDEX device_keys_member ON device_keys(team_id, user_id);
CREATE INDEX device_keys_web_session ON device_keys(web_session_id);
CREATE INDEX device_keys_push_device ON device_keys(push_device_id);
CREATE INDEX device_keys_credential ON device_keys(credential_id);

-- A key goes with what it stood on: its push device, its sign-in, its person's membership, the
-- passkey that endorsed it. Each trigger queues `device_key.removed` (actor `system`, subject
-- the key's person, `because` naming the cause) in the audit outbox in the same transaction,
-- then deletes the keys; the team's hub chains the events on its next drain.
CREATE VIEW device_key_removals AS
  SELECT k.team_id, k.device_id, k.user_id, k.web_session_id, k.push_device_id, k.credential_id, now.ms AS at,
         'device_key_removed:' || k.team_id || ':' || k.device_id || ':' || now.ms AS event_id,
         json_object('eventId', 'device_key_removed:' || k.team_id || ':' || k.device_id || ':' || now.ms,
                     'teamId', k.team_id, 'at', now.ms, 'actor', 'system', 'action', 'device_key.removed',
                     'subject', k.user_id, 'detail', json_object('deviceId', k.device_id, 'name', k.name)) AS event
    FROM device_keys k, (SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) AS ms) now;

CREATE TRIGGER device_keys_push_device_removed AFTER DELETE ON devices BEGIN
  INSERT OR IGNORE INTO audit_outbox (event_id, team_id, event, created_at)
    SELECT event_id, team_id, json_set(event, '$.detail.because', 'push_device_removed'), at FROM device_key_removals
     WHERE team_id = OLD.team_id AND push_device_id = OLD.id;
  DELETE FROM device_keys WHERE team_id = OLD.team_id AND push_device_id = OLD.id;
END;

CREATE TRIGGER device_keys_web_session_ended AFTER DELETE ON web_sessions BEGIN
  INSERT OR IGNORE INTO audit_outbox (event_id, team_id, event, created_at)
    SELECT event_id, team_id, json_set(event, '$.detail.because', 'signed_out'), at FROM device_key_removals
     WHERE web_session_id = OLD.id;
  DELETE FROM device_keys WHERE web_session_id = OLD.id;
END;

CREATE TRIGGER device_keys_member_removed AFTER DELETE ON memberships BEGIN
  INSERT OR IGNORE INTO audit_outbox (event_id, team_id, event, created_at)
    SELECT event_id, team_id, json_set(event, '$.detail.because', 'member_removed'), at FROM device_key_removals
     WHERE team_id = OLD.team_id AND user_id = OLD.user_id;
  DELETE FROM device_keys WHERE team_id = OLD.team_id AND user_id = OLD.user_id;
END;

CREATE TRIGGER device_keys_passkey_removed AFTER DELETE ON passkey_credentials BEGIN
  INSERT OR IGNORE INTO audit_outbox (event_id, team_id, event, created_at)
    SELECT event_id, team_id, json_set(event, '$.detail.because', 'passkey_removed'), at FROM device_key_removals
     WHERE credential_id = OLD.id;
  DELETE FROM device_keys WHERE credential_id = OLD.id;
END;

CREATE TRIGGER device_keys_team_deleted BEFORE DELETE ON teams BEGIN
  DELETE FROM device_keys WHERE team_id = OLD.id;
END;
