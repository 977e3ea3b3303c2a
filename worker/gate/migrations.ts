/**
 * A SessionGate's SQLite schema and its versioned migrations. Objects keep their storage across
 * deploys, so the schema only ever moves forward, one step per version.
 *
 * Owns: the tables and the steps between versions. Does not own: the statements that read and
 * write them (store.ts, ladder-store.ts).
 */
import { type MigrationStep, runMigrations } from "../sqlite-migrations";

/** Step n brings an object from version n to n + 1; objects from before versioning are at 0. */
const MIGRATIONS: MigrationStep[] = [
  // IF NOT EXISTS: objects at version 0 may already have these tables.
  `CREATE TABLE IF NOT EXISTS approvals (
     id TEXT PRIMARY KEY, rpc_id TEXT NOT NULL, socket_id TEXT NOT NULL, key_id TEXT NOT NULL,
     state TEXT NOT NULL, expires_at INTEGER NOT NULL, agent_options TEXT NOT NULL, record TEXT NOT NULL);
   CREATE INDEX IF NOT EXISTS approvals_pending ON approvals (state, socket_id);
   CREATE TABLE IF NOT EXISTS tool_calls (id TEXT PRIMARY KEY, data TEXT NOT NULL, updated_at INTEGER NOT NULL);
   CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, op TEXT NOT NULL);
   CREATE TABLE IF NOT EXISTS revoked_keys (key_id TEXT PRIMARY KEY);`,
  // HTTP-held requests: a lease in place of a socket, and the answer kept for polls after the fact.
  `ALTER TABLE approvals ADD COLUMN lease_until INTEGER;
   ALTER TABLE approvals ADD COLUMN answer TEXT;`,
  // Push fatigue: when this session last pushed, for at most 10 pushes per 10 minutes.
  "CREATE TABLE IF NOT EXISTS push_log (at INTEGER NOT NULL);",
  // The outbox's dead letters: each row counts the consecutive flushes it failed, and a row that
  // failed too often moves aside (kept, for inspection and a manual replay) instead of blocking
  // the rows behind it and waking the object forever.
  (sql) => {
    if (!hasColumn(sql, "outbox", "attempts")) {
      sql.exec("ALTER TABLE outbox ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0");
    }
    sql.exec(`CREATE TABLE IF NOT EXISTS outbox_dead (seq INTEGER PRIMARY KEY, op TEXT NOT NULL,
      attempts INTEGER NOT NULL, dead_at INTEGER NOT NULL, error TEXT)`);
  },
  // Tool calls per socket: a `session/update` decorates only requests asked on its own socket.
  // What was kept is a cache of hints, not a record, so it is dropped rather than moved.
  `DROP TABLE IF EXISTS tool_calls;
   CREATE TABLE tool_calls (socket_id TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL,
     updated_at INTEGER NOT NULL, PRIMARY KEY (socket_id, id));`,
  // The push budget moved to the team's hub (per device, across the team's sessions).
  "DROP TABLE IF EXISTS push_log; DELETE FROM meta WHERE k = 'summary_at';",
  // Retention: resolved rows older than the team's `limits.retentionDays` are pruned on the
  // alarm; by state and expiry, so the oldest of each state is found without a scan.
  "CREATE INDEX IF NOT EXISTS approvals_state_expiry ON approvals (state, expires_at);",
  // Step-up: the verified passkey assertions a high-risk request's allows carried (JSON array),
  // kept with the row so they are pruned with it.
  (sql) => {
    if (!hasColumn(sql, "approvals", "step_ups")) sql.exec("ALTER TABLE approvals ADD COLUMN step_ups TEXT");
  },
  // The escalation ladder (escalation.ts, ladder-store.ts): per request, its steps as opened,
  // what fired, the hub's receipts, the last progress the agent got, and when to look again.
  `CREATE TABLE IF NOT EXISTS ladders (approval_id TEXT PRIMARY KEY, ladder TEXT NOT NULL, receipts TEXT NOT NULL,
     progress TEXT, next_at INTEGER);
   CREATE INDEX IF NOT EXISTS ladders_next ON ladders (next_at);`,
  // Containment and bounds (resolved-cap.ts, store.ts): a row's stored size in bytes (set when it
  // resolves), counted from an index that covers it, so the cap on resolved rows reads no row;
  // that index replaces the (state, expires_at) one, which it starts with. Pending rows whose
  // resolution threw are set aside in `quarantined`, so they block nothing behind them.
  (sql) => {
    if (!hasColumn(sql, "approvals", "bytes")) {
      sql.exec("ALTER TABLE approvals ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0");
    }
    sql.exec(`UPDATE approvals SET bytes = length(CAST(record AS BLOB)) + length(CAST(agent_options AS BLOB))
      + COALESCE(length(CAST(answer AS BLOB)), 0) + COALESCE(length(CAST(step_ups AS BLOB)), 0)
      WHERE state <> 'pending'`);
    sql.exec(`CREATE INDEX IF NOT EXISTS approvals_state_expiry_bytes ON approvals (state, expires_at, bytes);
      DROP INDEX IF EXISTS approvals_state_expiry;
      CREATE TABLE IF NOT EXISTS quarantined (approval_id TEXT PRIMARY KEY, at INTEGER NOT NULL, error TEXT NOT NULL);`);
  },
  // A revoked key is remembered with when it was revoked, so the gate forgets it once nothing
  // could still vouch for it (store.ts, REVOKED_KEY_MEMORY_MS). Keys revoked before: from now.
  // Guarded like the steps above: an object from before versioning runs every step again.
  (sql) => {
    if (hasColumn(sql, "revoked_keys", "revoked_at")) return;
    sql.exec(`ALTER TABLE revoked_keys ADD COLUMN revoked_at INTEGER NOT NULL DEFAULT 0;
      UPDATE revoked_keys SET revoked_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000;`);
  },
];

/** The version every object reaches on its next start. */
export const SCHEMA_VERSION = MIGRATIONS.length;

export function migrate(storage: DurableObjectStorage): void {
  runMigrations(storage, MIGRATIONS);
}

function hasColumn(sql: SqlStorage, table: string, column: string): boolean {
  return sql.exec("SELECT 1 FROM pragma_table_info(?) WHERE name = ?", table, column).toArray().length > 0;
}
