/**
 * D1 access: the audit log's rows (hash-chained) and the route-side audit outbox. Pure D1:
 * appending an event goes through the team's TeamHub, the chain's one writer (`team/audit.ts`),
 * which inserts with these statements and drains the outbox.
 */

import { parseJson } from "../../sdk/src/protocol";
import { type AuditEntry, type AuditEvent, GENESIS_HASH, type StoredAuditRow } from "../audit-chain";

/**
 * Inserts a chained entry only if its `prev_hash` is still the team's last hash (compare and
 * swap), so even a writer with a stale head cannot fork the chain: it inserts nothing and
 * re-reads the head. A replayed `event_id` inserts nothing either.
 */
export function auditEntryStatement(db: D1Database, e: AuditEntry): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO audit_log (event_id, team_id, at, actor, action, subject, detail, prev_hash, hash)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9
        WHERE COALESCE((SELECT hash FROM audit_log WHERE team_id = ?2 ORDER BY seq DESC LIMIT 1), ?10) = ?8
       ON CONFLICT (event_id) DO NOTHING
       RETURNING seq`,
    )
    .bind(
      e.eventId,
      e.teamId,
      e.at,
      e.actor,
      e.action,
      e.subject,
      JSON.stringify(e.detail ?? {}),
      e.prevHash,
      e.hash,
      GENESIS_HASH,
    );
}

/**
 * A run of chained entries as ONE statement and one compare-and-swap: every entry goes in, in
 * order, only if the team's last hash is still the first entry's `prev_hash` and none of the
 * event ids is in the log yet; otherwise nothing does (the writer re-reads the head and drops
 * replays). The guard is computed once, before any row is written. The entries travel as one
 * JSON parameter (D1 binds at most 100 parameters; `AUDIT_RUN_BYTES` keeps it well under its
 * 2 MB value limit), `detail` as the same text `auditEntryStatement` stores.
 */
export function auditRunStatement(db: D1Database, entries: AuditEntry[]): D1PreparedStatement {
  const rows = entries.map((e) => ({ ...e, detail: JSON.stringify(e.detail ?? {}) }));
  return db
    .prepare(
      `WITH run AS (SELECT key AS n, value AS e FROM json_each(?1)),
            guard AS MATERIALIZED (
              SELECT COALESCE((SELECT hash FROM audit_log WHERE team_id = ?2 ORDER BY seq DESC LIMIT 1), ?4) = ?3
                 AND NOT EXISTS (SELECT 1 FROM audit_log WHERE event_id IN (SELECT e ->> 'eventId' FROM run)) AS ok)
       INSERT INTO audit_log (event_id, team_id, at, actor, action, subject, detail, prev_hash, hash)
       SELECT e ->> 'eventId', ?2, e ->> 'at', e ->> 'actor', e ->> 'action', e ->> 'subject', e ->> 'detail',
              e ->> 'prevHash', e ->> 'hash'
         FROM run, guard WHERE guard.ok ORDER BY n
       RETURNING seq`,
    )
    .bind(JSON.stringify(rows), entries[0]?.teamId ?? "", entries[0]?.prevHash ?? "", GENESIS_HASH);
}

/** The most JSON one run statement carries; a longer group is split into runs in the same batch. */
export const AUDIT_RUN_BYTES = 512 * 1024;

/**
 * Writes `before` (idempotent statements, e.g. the gates' index rows), then the entries as runs
 * of one compare-and-swap each, then `after` (statements that follow the entries written, e.g.
 * the webhook queue), all in ONE D1 batch (one transaction); returns the seqs that went in
 * (fewer than the entries: the head moved or an event was a replay) and `after`'s results.
 */
export async function insertAuditEntries(
  db: D1Database,
  entries: AuditEntry[],
  before: D1PreparedStatement[] = [],
  after: D1PreparedStatement[] = [],
): Promise<{ seqs: number[]; after: D1Result[] }> {
  const runs: AuditEntry[][] = [];
  let bytes = 0;
  for (const e of entries) {
    const size = JSON.stringify(e).length;
    const last = runs.at(-1);
    if (!last || bytes + size > AUDIT_RUN_BYTES) {
      runs.push([e]);
      bytes = size;
    } else {
      last.push(e);
      bytes += size;
    }
  }
  const statements = [...before, ...runs.map((run) => auditRunStatement(db, run))];
  if (statements.length === 0) return { seqs: [], after: [] };
  const results = await db.batch<{ seq: number }>([...statements, ...after]);
  const seqs = results
    .slice(before.length, statements.length)
    .flatMap((r) => r.results.map((row) => row.seq).sort((a, b) => a - b));
  return { seqs, after: results.slice(statements.length) };
}

/** Where the team's chain ends in D1: the last row, its hash (64 zeros if none) and how many rows. */
export interface AuditTail {
  seq: number;
  hash: string;
  count: number;
  at: number;
}

export async function auditTail(db: D1Database, teamId: string): Promise<AuditTail> {
  const row = await db
    .prepare(
      `SELECT seq, hash, at, (SELECT COUNT(*) FROM audit_log WHERE team_id = ?1) AS count
         FROM audit_log WHERE team_id = ?1 ORDER BY seq DESC LIMIT 1`,
    )
    .bind(teamId)
    .first<{ seq: number; hash: string | null; at: number; count: number }>();
  return row ? { ...row, hash: row.hash ?? GENESIS_HASH } : { seq: 0, hash: GENESIS_HASH, count: 0, at: 0 };
}

/**
 * The hash stored at one seq of the team's log, null when the row is gone. A row from before the
 * chain (no hash) reads as the genesis hash, as `auditTail` anchors it.
 */
export async function auditHashAt(db: D1Database, teamId: string, seq: number): Promise<string | null> {
  const row = await db
    .prepare("SELECT hash FROM audit_log WHERE team_id = ? AND seq = ?")
    .bind(teamId, seq)
    .first<{ hash: string | null }>();
  return row ? (row.hash ?? GENESIS_HASH) : null;
}

/** A condition in SQL whose parameters start at `?5` (`?1`–`?4` are the event's). */
export interface AuditCondition {
  sql: string;
  binds: Array<string | number | null>;
  /**
   * For details only the write itself settles (what a removal found): an SQL expression for the
   * event's JSON, from `?3` (the event as built, e.g. `json_set(?3, '$.detail.n', (SELECT …))`)
   * and the condition's parameters.
   */
  event?: string;
}

/**
 * Queues a route-side audit event in D1 for the hub to chain. The writes that record themselves
 * put it in the same batch as the action, so the two commit together; `onlyIf` makes it as
 * conditional as the action (a revocation that revoked nothing records nothing). A replay is
 * ignored.
 */
export function auditOutboxStatement(db: D1Database, e: AuditEvent, onlyIf?: AuditCondition): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO audit_outbox (event_id, team_id, event, created_at)
       SELECT ?1, ?2, ${onlyIf?.event ?? "?3"}, ?4 WHERE ${onlyIf?.sql ?? "1"}
       ON CONFLICT DO NOTHING`,
    )
    .bind(e.eventId, e.teamId, JSON.stringify(e), Date.now(), ...(onlyIf?.binds ?? []));
}

/** The statements that queue `audit` in a write's batch: none without one. */
export function auditOutboxStatements(db: D1Database, audit?: AuditEvent, onlyIf?: AuditCondition) {
  return audit ? [auditOutboxStatement(db, audit, onlyIf)] : [];
}

/** The team's queued events, oldest first (at most `limit`). */
export async function queuedAuditEvents(db: D1Database, teamId: string, limit: number): Promise<AuditEvent[]> {
  const { results } = await db
    .prepare("SELECT event FROM audit_outbox WHERE team_id = ? ORDER BY created_at, rowid LIMIT ?")
    .bind(teamId, limit)
    .all<{ event: string }>();
  return results.flatMap((r) => {
    const event = parseJson(r.event) as AuditEvent | undefined;
    return event ? [event] : [];
  });
}

/** Removes queued events that are now in the chain (at most 100 ids: D1's bound-parameter limit). */
export async function dequeueAuditEvents(db: D1Database, eventIds: string[]): Promise<void> {
  if (eventIds.length === 0) return;
  await db
    .prepare(`DELETE FROM audit_outbox WHERE event_id IN (${eventIds.map(() => "?").join(", ")})`)
    .bind(...eventIds)
    .run();
}

/** Which of these event ids are already in the log (at most 100 per call: D1's bound-parameter limit). */
export async function writtenEventIds(db: D1Database, eventIds: string[]): Promise<Set<string>> {
  if (eventIds.length === 0) return new Set();
  const { results } = await db
    .prepare(`SELECT event_id FROM audit_log WHERE event_id IN (${eventIds.map(() => "?").join(", ")})`)
    .bind(...eventIds)
    .all<{ event_id: string }>();
  return new Set(results.map((r) => r.event_id));
}

const AUDIT_COLUMNS = `seq, event_id AS eventId, team_id AS teamId, at, actor, action, subject, detail,
  prev_hash AS prevHash, hash`;

/** Newest first, before `beforeSeq` when given. */
export async function listAudit(
  db: D1Database,
  q: { teamId: string; beforeSeq: number | null; limit: number },
): Promise<StoredAuditRow[]> {
  const { results } = await db
    .prepare(
      `SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE team_id = ?1 AND (?2 IS NULL OR seq < ?2)
        ORDER BY seq DESC LIMIT ?3`,
    )
    .bind(q.teamId, q.beforeSeq, q.limit)
    .all<StoredAuditRow>();
  return results;
}

/** Oldest first, after `afterSeq`: the verifier's pages. */
export async function auditPage(
  db: D1Database,
  q: { teamId: string; afterSeq: number; limit: number },
): Promise<StoredAuditRow[]> {
  const { results } = await db
    .prepare(`SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE team_id = ? AND seq > ? ORDER BY seq LIMIT ?`)
    .bind(q.teamId, q.afterSeq, q.limit)
    .all<StoredAuditRow>();
  return results;
}
