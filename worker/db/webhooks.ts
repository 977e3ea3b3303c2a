/**
 * D1 access: a team's webhook endpoints (`webhook_endpoints`, secrets sealed) and the queue of
 * messages to them (`webhook_messages`, migration 0037). Every query is scoped by the team from
 * authentication (routes) or by the hub's own team (delivery).
 *
 * Owns: the SQL, including `webhookQueueStatement`, which the audit chain's writer puts in the
 * same batch as the entries it appends, so an entry in the chain is in the queue too. Does not
 * own: which action makes which event (passed in), sealing, or sending (`webhooks/`).
 */

import { WEBHOOK_DELIVERIES_KEPT, type Webhook, type WebhookDelivery } from "../../sdk/src/human/webhooks";
import type { AuditEvent } from "../audit-chain";
import { auditOutboxStatements } from "./audit";

export interface NewWebhook {
  id: string;
  teamId: string;
  url: string;
  events: string[];
  sealedSecret: string;
  createdBy: string;
  now: number;
  maxPerTeam: number;
}

/** Inserts the endpoint (with its audit event) unless the team has `maxPerTeam` already; false then. */
export async function insertWebhook(db: D1Database, w: NewWebhook, audit: AuditEvent): Promise<boolean> {
  const onlyIf = { sql: "EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = ?5)", binds: [w.id] };
  const [insert] = await db.batch([
    db
      .prepare(
        `INSERT INTO webhook_endpoints (id, team_id, url, events, secret, created_by, created_at, secret_at)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7
          WHERE (SELECT COUNT(*) FROM webhook_endpoints WHERE team_id = ?2) < ?8`,
      )
      .bind(w.id, w.teamId, w.url, JSON.stringify(w.events), w.sealedSecret, w.createdBy, w.now, w.maxPerTeam),
    ...auditOutboxStatements(db, audit, onlyIf),
  ]);
  return (insert?.meta.changes ?? 0) > 0;
}

/** Seals a new secret onto the team's endpoint (with its audit event); false when there is no such endpoint. */
export async function replaceWebhookSecret(
  db: D1Database,
  r: { teamId: string; id: string; sealedSecret: string; now: number },
  audit: AuditEvent,
): Promise<boolean> {
  const onlyIf = {
    sql: "EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = ?5 AND team_id = ?6)",
    binds: [r.id, r.teamId],
  };
  const [update] = await db.batch([
    db
      .prepare("UPDATE webhook_endpoints SET secret = ?3, secret_at = ?4 WHERE id = ?1 AND team_id = ?2")
      .bind(r.id, r.teamId, r.sealedSecret, r.now),
    ...auditOutboxStatements(db, audit, onlyIf),
  ]);
  return (update?.meta.changes ?? 0) > 0;
}

/** Removes the team's endpoint and its queue (with its audit event); false when there is no such endpoint. */
export async function deleteWebhook(
  db: D1Database,
  r: { teamId: string; id: string },
  audit: AuditEvent,
): Promise<boolean> {
  const onlyIf = {
    sql: "EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = ?5 AND team_id = ?6)",
    binds: [r.id, r.teamId],
  };
  const [, , removed] = await db.batch([
    // The audit event is queued first: its condition must still see the endpoint.
    ...auditOutboxStatements(db, audit, onlyIf),
    db.prepare("DELETE FROM webhook_messages WHERE endpoint_id = ?1 AND team_id = ?2").bind(r.id, r.teamId),
    db.prepare("DELETE FROM webhook_endpoints WHERE id = ?1 AND team_id = ?2").bind(r.id, r.teamId),
  ]);
  return (removed?.meta.changes ?? 0) > 0;
}

interface EndpointRow {
  id: string;
  url: string;
  events: string;
  created_at: number;
  secret_at: number;
}

interface MessageRow {
  endpoint_id: string;
  id: string;
  type: string;
  state: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  created_at: number;
  last_attempt_at: number | null;
  next_at: number;
  delivered_at: number | null;
}

/** The team's endpoints, oldest first, each with its newest deliveries (never a secret). */
export async function listWebhooks(db: D1Database, teamId: string): Promise<Webhook[]> {
  const [endpoints, messages] = await db.batch<EndpointRow | MessageRow>([
    db
      .prepare(
        "SELECT id, url, events, created_at, secret_at FROM webhook_endpoints WHERE team_id = ? ORDER BY created_at, id",
      )
      .bind(teamId),
    db
      .prepare(
        `SELECT endpoint_id, id, type, state, attempts, last_status, last_error, created_at, last_attempt_at,
                next_at, delivered_at
           FROM (SELECT m.*, ROW_NUMBER() OVER (PARTITION BY m.endpoint_id ORDER BY m.n DESC) AS k
                   FROM webhook_messages m WHERE m.team_id = ?1)
          WHERE k <= ?2 ORDER BY endpoint_id, n DESC`,
      )
      .bind(teamId, WEBHOOK_DELIVERIES_KEPT),
  ]);
  const byEndpoint = new Map<string, WebhookDelivery[]>();
  for (const m of (messages?.results ?? []) as MessageRow[]) {
    const list = byEndpoint.get(m.endpoint_id) ?? [];
    list.push({
      id: m.id,
      type: m.type as WebhookDelivery["type"],
      state: m.state as WebhookDelivery["state"],
      attempts: m.attempts,
      lastStatus: m.last_status,
      lastError: m.last_error,
      createdAt: m.created_at,
      lastAttemptAt: m.last_attempt_at,
      nextAt: m.state === "pending" ? m.next_at : null,
      deliveredAt: m.delivered_at,
    });
    byEndpoint.set(m.endpoint_id, list);
  }
  return ((endpoints?.results ?? []) as EndpointRow[]).map((e) => ({
    id: e.id,
    url: e.url,
    events: JSON.parse(e.events) as Webhook["events"],
    createdAt: e.created_at,
    secretAt: e.secret_at,
    deliveries: byEndpoint.get(e.id) ?? [],
  }));
}

/**
 * Queues a message per endpoint and event for each entry just appended (`{eventId, hash}`), in
 * chain order. It runs in the writer's batch after the entries, and joins the log on the hash
 * as well, so only entries this batch wrote (or an earlier try of the same write) queue
 * anything; an entry already queued is not queued twice. `typeOf` maps an action to its event
 * (besides `audit.appended`, which every entry is). Returns what it queued (`RETURNING`).
 */
export function webhookQueueStatement(
  db: D1Database,
  teamId: string,
  entries: Array<{ eventId: string; hash: string }>,
  typeOf: Record<string, string>,
  now: number,
): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO webhook_messages (id, endpoint_id, team_id, type, payload, created_at, next_at)
       SELECT a.event_id || '/' || t.value, w.id, ?1, t.value,
              json_object('type', t.value,
                          'timestamp', strftime('%Y-%m-%dT%H:%M:%fZ', a.at / 1000.0, 'unixepoch'),
                          'data', json_object('seq', a.seq, 'eventId', a.event_id, 'at', a.at, 'actor', a.actor,
                                              'action', a.action, 'subject', a.subject, 'detail', json(a.detail),
                                              'prevHash', a.prev_hash, 'hash', a.hash)),
              ?4, ?4
         FROM json_each(?2) r
         JOIN audit_log a ON a.event_id = r.value ->> '$.eventId' AND a.hash = r.value ->> '$.hash' AND a.team_id = ?1
         JOIN webhook_endpoints w ON w.team_id = ?1
         JOIN json_each(w.events) t
           ON t.value = 'audit.appended' OR t.value = (SELECT m.value FROM json_each(?3) m WHERE m.key = a.action)
        ORDER BY a.seq, w.id, t.value = 'audit.appended'
       ON CONFLICT (endpoint_id, id) DO NOTHING
       RETURNING n`,
    )
    .bind(teamId, JSON.stringify(entries), JSON.stringify(typeOf), now);
}

/** The next message to send to one endpoint: the oldest pending one, with what sending it needs. */
export interface WebhookHead {
  n: number;
  id: string;
  endpointId: string;
  url: string;
  sealedSecret: string;
  payload: string;
  attempts: number;
  createdAt: number;
}

/** Each endpoint's oldest pending message that is due at `now` (one per endpoint: order is kept). */
export async function dueWebhookHeads(
  db: D1Database,
  teamId: string,
  now: number,
  limit: number,
): Promise<WebhookHead[]> {
  const { results } = await db
    .prepare(
      `SELECT m.n, m.id, w.id AS endpointId, w.url, w.secret AS sealedSecret, m.payload, m.attempts,
              m.created_at AS createdAt
         FROM webhook_endpoints w
         JOIN webhook_messages m
           ON m.n = (SELECT MIN(n) FROM webhook_messages WHERE endpoint_id = w.id AND state = 'pending')
        WHERE w.team_id = ?1 AND m.next_at <= ?2
        ORDER BY m.next_at LIMIT ?3`,
    )
    .bind(teamId, now, limit)
    .all<WebhookHead>();
  return results;
}

/** When the team's next message is due (the earliest among each endpoint's oldest pending one); null: none. */
export async function nextWebhookAt(db: D1Database, teamId: string): Promise<number | null> {
  const row = await db
    .prepare(
      `SELECT MIN(m.next_at) AS at
         FROM webhook_endpoints w
         JOIN webhook_messages m
           ON m.n = (SELECT MIN(n) FROM webhook_messages WHERE endpoint_id = w.id AND state = 'pending')
        WHERE w.team_id = ?1`,
    )
    .bind(teamId)
    .first<{ at: number | null }>();
  return row?.at ?? null;
}

/** How one try went, and what follows: `pending` again at `nextAt`, `delivered`, or `failed` for good. */
export interface WebhookAttempt {
  n: number;
  endpointId: string;
  state: "pending" | "delivered" | "failed";
  status: number | null;
  error: string | null;
  at: number;
  nextAt: number;
}

/** Records a try and prunes the endpoint's settled messages past the newest `WEBHOOK_DELIVERIES_KEPT`. */
export async function recordWebhookAttempt(db: D1Database, a: WebhookAttempt): Promise<void> {
  await db.batch([
    db
      .prepare(
        `UPDATE webhook_messages
            SET state = ?2, attempts = attempts + 1, last_status = ?3, last_error = ?4, last_attempt_at = ?5,
                next_at = ?6, delivered_at = CASE WHEN ?2 = 'delivered' THEN ?5 END
          WHERE n = ?1 AND state = 'pending'`,
      )
      .bind(a.n, a.state, a.status, a.error, a.at, a.nextAt),
    db
      .prepare(
        `DELETE FROM webhook_messages
          WHERE endpoint_id = ?1 AND state != 'pending'
            AND n < (SELECT MIN(n) FROM (SELECT n FROM webhook_messages WHERE endpoint_id = ?1
                                          ORDER BY n DESC LIMIT ?2))`,
      )
      .bind(a.endpointId, WEBHOOK_DELIVERIES_KEPT),
  ]);
}

/** Teams with a message that should have been sent before `before` (the Cron Trigger's sweep). */
export async function teamsWithOverdueWebhooks(db: D1Database, before: number, limit: number): Promise<string[]> {
  const { results } = await db
    .prepare("SELECT DISTINCT team_id FROM webhook_messages WHERE state = 'pending' AND next_at < ?1 LIMIT ?2")
    .bind(before, limit)
    .all<{ team_id: string }>();
  return results.map((r) => r.team_id);
}
