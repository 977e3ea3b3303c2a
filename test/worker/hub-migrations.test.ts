/** The TeamHub's storage schema: versioned, and hubs from before versioning migrate in place. */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { migrate, SCHEMA_VERSION } from "../../worker/hub/migrations";
import { hubStub, unique } from "./helpers";

const version = (sql: SqlStorage) => sql.exec("SELECT v FROM meta WHERE k = 'schema_version'").one().v;

/** What every hub ran at each start before its schema had versions. */
const UNVERSIONED_SCHEMA = `
  CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS devices (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL,
    endpoint TEXT NOT NULL, p256dh TEXT NOT NULL, auth TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS members (user_id TEXT PRIMARY KEY, role TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS approvals (id TEXT PRIMARY KEY, owner_user_id TEXT NOT NULL, state TEXT NOT NULL,
    expires_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, record TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS deliveries (approval_id TEXT NOT NULL, device_id TEXT NOT NULL, user_id TEXT NOT NULL,
    device_name TEXT NOT NULL, sent_at INTEGER, delivered_at INTEGER, seen_at INTEGER, failed_at INTEGER,
    PRIMARY KEY (approval_id, device_id));
  CREATE TABLE IF NOT EXISTS push_queue (seq INTEGER PRIMARY KEY AUTOINCREMENT, device_id TEXT NOT NULL,
    approval_id TEXT, payload TEXT NOT NULL, urgency TEXT NOT NULL, expires_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, next_at INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS people (user_id TEXT PRIMARY KEY, name TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS sessions (session_id TEXT PRIMARY KEY, owner_user_id TEXT NOT NULL,
    info TEXT NOT NULL, connected INTEGER NOT NULL, connected_at INTEGER, disconnected_at INTEGER,
    last_seen_at INTEGER NOT NULL, pending INTEGER NOT NULL);`;

const TABLES = ["meta", "devices", "members", "approvals", "deliveries", "push_queue", "people", "sessions"];

describe("the TeamHub's schema", () => {
  it("a new hub starts at the latest version", async () => {
    await runInDurableObject(hubStub(unique("team")), (_, state) => {
      expect(version(state.storage.sql)).toBe(String(SCHEMA_VERSION));
    });
  });

  it("a hub from before versioning keeps its rows and reaches the latest version, once", async () => {
    await runInDurableObject(hubStub(unique("team")), (_, state) => {
      const { sql } = state.storage;
      for (const table of TABLES) sql.exec(`DROP TABLE ${table}`);
      sql.exec(UNVERSIONED_SCHEMA);
      sql.exec("INSERT INTO meta (k, v) VALUES ('team', 'team_old'), ('audit_head', ?)", "a".repeat(64));
      sql.exec("INSERT INTO devices VALUES ('dev_1', 'usr_1', 'Phone', 'https://fcm.googleapis.com/x', 'p', 'a')");
      sql.exec(
        "INSERT INTO push_queue (device_id, payload, urgency, expires_at, next_at) VALUES ('dev_1', '{}', 'normal', 9, 1)",
      );
      sql.exec("INSERT INTO sessions VALUES ('s1', 'usr_1', '{}', 1, 1, NULL, 1, 0)");

      migrate(state.storage);
      expect(version(sql)).toBe(String(SCHEMA_VERSION));
      migrate(state.storage); // a second start changes nothing
      expect(version(sql)).toBe(String(SCHEMA_VERSION));

      expect(sql.exec("SELECT v FROM meta WHERE k = 'team'").one().v).toBe("team_old");
      expect(sql.exec("SELECT id FROM devices").toArray()).toEqual([{ id: "dev_1" }]);
      expect(sql.exec("SELECT attempts FROM push_queue").toArray()).toEqual([{ attempts: 0 }]);
      expect(sql.exec("SELECT session_id FROM sessions").toArray()).toEqual([{ session_id: "s1" }]);
    });
  });
});
