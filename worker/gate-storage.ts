/**
 * A SessionGate's own SQLite storage: the schema, its versioned migrations, and the row shapes.
 * Objects keep their storage across deploys, so the schema only ever moves forward, one step
 * per version.
 */
import type { TeamPolicy } from "./policy";
import type { SessionInfo } from "./types";

/** The session the object serves, kept under `meta('session')`. */
export interface SessionMeta {
  teamId: string;
  sessionId: string;
  ownerUserId: string;
  policy: TeamPolicy;
  /** The team's policy_version of `policy`; absent (0) in objects from before versions. */
  policyVersion?: number;
  info: SessionInfo;
}

export interface PendingRow {
  id: string;
  rpc_id: string;
  /** Empty for a request held over HTTP, by `lease_until` instead. */
  socket_id: string;
  key_id: string;
  lease_until: number | null;
  agent_options: string;
  record: string;
  /** The agent's answer (RequestPermissionResponse JSON), once resolved. */
  answer: string | null;
  [key: string]: SqlStorageValue;
}

export interface StoredRow extends PendingRow {
  state: string;
}

/** Step n brings an object from version n to n + 1; objects from before versioning are at 0. */
const MIGRATIONS = [
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
];

/** The version every object reaches on its next start. */
export const SCHEMA_VERSION = MIGRATIONS.length;

export function migrate(storage: DurableObjectStorage): void {
  const { sql } = storage;
  sql.exec("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)");
  const row = sql.exec("SELECT v FROM meta WHERE k = 'schema_version'").toArray()[0];
  const version = row ? Number(row.v) : 0;
  MIGRATIONS.slice(version).forEach((step, i) => {
    storage.transactionSync(() => {
      sql.exec(step);
      sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('schema_version', ?)", String(version + i + 1));
    });
  });
}
