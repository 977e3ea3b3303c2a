-- Signed webhooks (docs/human-api.md "Webhooks"): a team's endpoints and the queue of messages
-- to them. D1 is the queue: the hub writes a message in the same batch as the audit entry it
-- comes from (worker/db/webhooks.ts), so an event that is in the chain is in the queue too.
CREATE TABLE webhook_endpoints (
  id          TEXT PRIMARY KEY,
  team_id     TEXT NOT NULL REFERENCES teams(id),
  url         TEXT NOT NULL,
  events      TEXT NOT NULL,               -- JSON array of event names
  secret      TEXT NOT NULL,               -- sealed (AES-GCM, worker/webhooks/secret-box.ts), never plain
  created_by  TEXT NOT NULL,               -- user id
  created_at  INTEGER NOT NULL,
  secret_at   INTEGER NOT NULL             -- when the secret was made (creation or rotation)
);
CREATE INDEX webhook_endpoints_team ON webhook_endpoints(team_id);

-- One message to one endpoint, in order per endpoint (`n`): at most one in flight, a later one
-- waits behind one being retried. Kept while pending, then the newest 50 per endpoint.
CREATE TABLE webhook_messages (
  n               INTEGER PRIMARY KEY AUTOINCREMENT,
  id              TEXT NOT NULL,           -- the webhook-id header: <audit event id>/<type>
  endpoint_id     TEXT NOT NULL,
  team_id         TEXT NOT NULL,
  type            TEXT NOT NULL,
  payload         TEXT NOT NULL,           -- the JSON body, the same on every try
  created_at      INTEGER NOT NULL,
  state           TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  next_at         INTEGER NOT NULL,
  last_status     INTEGER,
  last_error      TEXT,
  last_attempt_at INTEGER,
  delivered_at    INTEGER,
  UNIQUE (endpoint_id, id)
);
CREATE INDEX webhook_messages_pending ON webhook_messages(team_id, state, endpoint_id, n);
CREATE INDEX webhook_messages_endpoint ON webhook_messages(endpoint_id, n);
CREATE INDEX webhook_messages_due ON webhook_messages(state, next_at);
