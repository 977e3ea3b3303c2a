/**
 * Web sessions as the hub vouches for them: whether a web identity the Worker took from its
 * per-isolate cache still holds in this team, so a decision waits on no D1 read and a member
 * removed, demoted or signed out a moment ago still decides nothing. The cached identity is at
 * most `WEB_IDENTITY_CACHE_MS` old, and every change that could make it wrong reaches this hub
 * before the route that made it answers:
 * - a session that ended here (signed out, ended from another device, moved to another team:
 *   `closeWebSession`) is remembered for ENDED_MEMORY_MS, far longer than a cached copy lives;
 * - a removal or a role change drops the directory (`forgetDirectory`), and the roles vouched
 *   with are never older than VOUCH_DIRECTORY_MS, so even a drop that never arrived is bounded.
 * When the hub cannot vouch, the route reads D1 itself.
 *
 * Owns: the `ended_web_sessions` table. Does not own: the roles (`directory.ts`), the sessions
 * (D1, `db/web-sessions.ts`), or who may decide a given request (the gate).
 */
import type { Role } from "../../sdk/src/human/roles";
import { WEB_IDENTITY_CACHE_MS } from "../db";
import type { Directory } from "./directory";
import type { HubHost } from "./host";

/** How long an ended session is remembered: six cache lifetimes, so no clock drift matters. */
export const ENDED_MEMORY_MS = 6 * WEB_IDENTITY_CACHE_MS;
/** The oldest copy of the team's roles the hub vouches with; older, it reads D1 first. */
export const VOUCH_DIRECTORY_MS = WEB_IDENTITY_CACHE_MS;

export class WebSessions {
  constructor(
    private readonly host: HubHost,
    private readonly directory: Directory,
  ) {}

  /** A session of this team ended: until ENDED_MEMORY_MS have passed, the hub vouches for no cached copy. */
  ended(tokenHash: string, now: number): void {
    const { sql } = this.host;
    sql.exec("DELETE FROM ended_web_sessions WHERE ended_at < ?", now - ENDED_MEMORY_MS);
    sql.exec("INSERT OR REPLACE INTO ended_web_sessions (token_hash, ended_at) VALUES (?, ?)", tokenHash, now);
  }

  /** The role `userId` holds in the team now, or null (ended lately, not a member): the route then asks D1. */
  async currentRole(tokenHash: string, userId: string, now: number): Promise<Role | null> {
    const ended = this.host.sql
      .exec("SELECT 1 FROM ended_web_sessions WHERE token_hash = ? AND ended_at >= ?", tokenHash, now - ENDED_MEMORY_MS)
      .toArray();
    if (ended.length > 0) return null;
    await this.directory.load(VOUCH_DIRECTORY_MS);
    return this.directory.roleOf(userId);
  }
}
