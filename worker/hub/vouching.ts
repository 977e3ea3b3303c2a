/**
 * Credentials the hub vouches for: whether a web session or an agent key the Worker took from
 * its per-isolate cache (`auth.ts`) still holds in this team, so a decision, or an agent's
 * connect, request or poll, waits on no D1 read, and a member removed, demoted or signed out, or
 * a key revoked, a moment ago still gets nothing. A cached copy is at most
 * `WEB_IDENTITY_CACHE_MS` / `AGENT_KEY_CACHE_MS` old, and every change that could make it wrong
 * reaches this hub before the route that made it answers:
 * - a session that ended here (signed out, ended from another device, moved to another team:
 *   `closeWebSession`) or a key revoked (`team/keys.ts`: the key routes, the agent's own, a
 *   member's removal) is remembered for six cache lifetimes, far longer than a copy lives (a
 *   revoked key also for as long as its fan-out to the sessions it opened is on its way,
 *   `revocations.ts`); at most MAX_REMEMBERED of each, the oldest forgotten first;
 * - a removal or a role change drops the directory (`forgetDirectory`), and the roles vouched
 *   with are never older than VOUCH_DIRECTORY_MS, so even a drop that never arrived is bounded.
 * When the hub cannot vouch, the Worker reads D1 itself.
 *
 * Owns: the `ended_web_sessions` and `revoked_keys` tables. Does not own: the roles
 * (`directory.ts`), the sessions and keys (D1), a revocation's fan-out (`revocations.ts`), or
 * who may decide a given request (the gate).
 */
import type { Role } from "../../sdk/src/human/roles";
import { AGENT_KEY_CACHE_MS, WEB_IDENTITY_CACHE_MS } from "../db";
import type { Directory } from "./directory";
import type { HubHost } from "./host";

/** How long an ended session is remembered: six cache lifetimes, so no clock drift matters. */
export const ENDED_MEMORY_MS = 6 * WEB_IDENTITY_CACHE_MS;
/** How long a revoked key is remembered, likewise. */
export const REVOKED_MEMORY_MS = 6 * AGENT_KEY_CACHE_MS;
/**
 * The most rows each table keeps past their memory's prune: the oldest go first (never a revoked
 * key still being fanned out). Far above what a team revokes or signs out in a minute.
 */
export const MAX_REMEMBERED = 10_000;
/** The oldest copy of the team's roles the hub vouches with; older, it reads D1 first. */
export const VOUCH_DIRECTORY_MS = WEB_IDENTITY_CACHE_MS;

/** A table of credentials the hub remembers for a while, by id. */
interface Remembered {
  table: string;
  id: string;
  at: string;
  memoryMs: number;
  /** SQL over the row: remembered past `memoryMs` (and never pruned) while it holds. */
  pinned: string;
}

const ENDED_SESSIONS: Remembered = {
  table: "ended_web_sessions",
  id: "token_hash",
  at: "ended_at",
  memoryMs: ENDED_MEMORY_MS,
  pinned: "0",
};
const REVOKED_KEYS: Remembered = {
  table: "revoked_keys",
  id: "key_id",
  at: "revoked_at",
  memoryMs: REVOKED_MEMORY_MS,
  pinned: "key_id IN (SELECT key_id FROM revocation_fanout)",
};

export class Vouching {
  constructor(
    private readonly host: HubHost,
    private readonly directory: Directory,
  ) {}

  /** A session of this team ended: until ENDED_MEMORY_MS have passed, the hub vouches for no cached copy. */
  sessionEnded(tokenHash: string, now: number): void {
    this.remember(ENDED_SESSIONS, tokenHash, now);
  }

  /** The role `userId` holds in the team now, or null (ended lately, not a member): the route then asks D1. */
  async currentRole(tokenHash: string, userId: string, now: number): Promise<Role | null> {
    if (this.remembers(ENDED_SESSIONS, tokenHash, now)) return null;
    return this.roleNow(userId);
  }

  /** A key of this team was revoked: until REVOKED_MEMORY_MS have passed, no cached copy is vouched for. */
  keyRevoked(keyId: string, now: number): void {
    this.remember(REVOKED_KEYS, keyId, now);
  }

  /** Whether `keyId`, held by `userId`, is in use here now: not revoked lately, its holder a member. */
  async keyInUse(keyId: string, userId: string, now: number): Promise<boolean> {
    if (this.revokedLately(keyId, now)) return false;
    return (await this.roleNow(userId)) !== null;
  }

  /** Whether `keyId` was revoked within REVOKED_MEMORY_MS, or its revocation is still being fanned out. */
  revokedLately(keyId: string, now: number): boolean {
    return this.remembers(REVOKED_KEYS, keyId, now);
  }

  /** Forgets revoked keys past their memory and no longer fanned out (also bounded by MAX_REMEMBERED). */
  pruneRevokedKeys(now: number): void {
    this.prune(REVOKED_KEYS, now);
  }

  private async roleNow(userId: string): Promise<Role | null> {
    await this.directory.load(VOUCH_DIRECTORY_MS);
    return this.directory.roleOf(userId);
  }

  private remember(r: Remembered, id: string, now: number): void {
    this.prune(r, now);
    this.host.sql.exec(`INSERT OR REPLACE INTO ${r.table} (${r.id}, ${r.at}) VALUES (?, ?)`, id, now);
  }

  /** Drops rows past their memory, then the oldest beyond MAX_REMEMBERED; never a pinned one. */
  private prune(r: Remembered, now: number): void {
    const { sql } = this.host;
    sql.exec(`DELETE FROM ${r.table} WHERE ${r.at} < ? AND NOT (${r.pinned})`, now - r.memoryMs);
    sql.exec(
      `DELETE FROM ${r.table} WHERE ${r.id} IN (SELECT ${r.id} FROM ${r.table} WHERE NOT (${r.pinned})
         ORDER BY ${r.at} DESC LIMIT -1 OFFSET ?)`,
      MAX_REMEMBERED,
    );
  }

  private remembers(r: Remembered, id: string, now: number): boolean {
    const rows = this.host.sql.exec(
      `SELECT 1 FROM ${r.table} WHERE ${r.id} = ? AND (${r.at} >= ? OR ${r.pinned})`,
      id,
      now - r.memoryMs,
    );
    return rows.toArray().length > 0;
  }
}
