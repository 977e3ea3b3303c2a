/**
 * Versioned schema steps for a Durable Object's SQLite, shared by `SessionGate` and `TeamHub`.
 * Objects keep their storage across deploys, so a schema only moves forward: step n brings
 * storage from version n to n + 1, each step in its own transaction, and the version is kept in
 * `meta('schema_version')` (objects from before versioning are at 0).
 *
 * Owns: running the steps. Does not own: the steps (`gate/migrations.ts`, `hub/migrations.ts`).
 */

/** A step: SQL to run, or a function for steps that must look before they change. */
export type MigrationStep = string | ((sql: SqlStorage) => void);

/** Brings `storage` to version `steps.length`. */
export function runMigrations(storage: DurableObjectStorage, steps: readonly MigrationStep[]): void {
  const { sql } = storage;
  sql.exec("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)");
  const row = sql.exec("SELECT v FROM meta WHERE k = 'schema_version'").toArray()[0];
  const version = row ? Number(row.v) : 0;
  steps.slice(version).forEach((step, i) => {
    storage.transactionSync(() => {
      if (typeof step === "string") sql.exec(step);
      else step(sql);
      sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('schema_version', ?)", String(version + i + 1));
    });
  });
}
