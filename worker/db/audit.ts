/**
 * D1 access: the audit log's rows (hash-chained). Pure D1: appending an event goes through the
 * team's TeamHub, the chain's one writer (`team/audit.ts`), which inserts with these statements.
 */
import { type AuditEntry, GENESIS_HASH, type StoredAuditRow } from "../audit-chain";

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

/** Inserts entries in order; returns how many went in (fewer: the head moved or an event was a replay). */
export async function insertAuditEntries(db: D1Database, entries: AuditEntry[]): Promise<number> {
  const results = await db.batch(entries.map((e) => auditEntryStatement(db, e)));
  return results.reduce((n, r) => n + r.results.length, 0);
}

/** The team's chain head: the last entry's hash (64 zeros before the first chained entry). */
export async function lastAuditHash(db: D1Database, teamId: string): Promise<string> {
  const row = await db
    .prepare("SELECT hash FROM audit_log WHERE team_id = ? ORDER BY seq DESC LIMIT 1")
    .bind(teamId)
    .first<{ hash: string | null }>();
  return row?.hash ?? GENESIS_HASH;
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
