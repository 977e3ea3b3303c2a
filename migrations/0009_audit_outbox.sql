-- Route-side audit events, written in the same D1 batch as the action they record (or, where
-- the action's write is not a batch, before the route answers), and moved into `audit_log` by
-- the team's hub, the chain's one writer. A row leaves only once its event is in the chain, so
-- a hub that is down loses nothing: it drains the rows on its next append, verify or alarm.
CREATE TABLE audit_outbox (
  event_id    TEXT PRIMARY KEY,
  team_id     TEXT NOT NULL,
  event       TEXT NOT NULL,                -- the AuditEvent as JSON
  created_at  INTEGER NOT NULL
);
CREATE INDEX audit_outbox_team ON audit_outbox(team_id, created_at);
