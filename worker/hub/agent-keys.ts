/**
 * Agent keys as the hub vouches for them: whether an API key the Worker took from its
 * per-isolate cache (`auth.ts`) is still in use in this team, so an agent's connect, request or
 * poll waits on no D1 read for its key, and a key revoked a moment ago is still refused. The
 * cached key is at most `AGENT_KEY_CACHE_MS` old, and every change that could make it wrong
 * reaches this hub before the route that made it answers:
 * - a revocation (`team/keys.ts`: the key routes, the agent's own, a member's removal) is
 *   remembered for REVOKED_MEMORY_MS, far longer than a cached copy lives;
 * - a removal drops the directory (`forgetDirectory`), and the members vouched with are never
 *   older than VOUCH_DIRECTORY_MS.
 * When the hub cannot vouch, the Worker reads D1 itself.
 *
 * Owns: the `revoked_keys` table. Does not own: the keys (D1, `db/keys.ts`), the members
 * (`directory.ts`), or the sessions a key opened (each gate hears of the revocation itself).
 */
import { AGENT_KEY_CACHE_MS } from "../db";
import type { Directory } from "./directory";
import type { HubHost } from "./host";
import { VOUCH_DIRECTORY_MS } from "./web-sessions";

/** How long a revocation is remembered: six cache lifetimes, so no clock drift matters. */
export const REVOKED_MEMORY_MS = 6 * AGENT_KEY_CACHE_MS;

export class AgentKeys {
  constructor(
    private readonly host: HubHost,
    private readonly directory: Directory,
  ) {}

  /** A key of this team was revoked: until REVOKED_MEMORY_MS have passed, no cached copy is vouched for. */
  revoked(keyId: string, now: number): void {
    const { sql } = this.host;
    sql.exec("DELETE FROM revoked_keys WHERE revoked_at < ?", now - REVOKED_MEMORY_MS);
    sql.exec("INSERT OR REPLACE INTO revoked_keys (key_id, revoked_at) VALUES (?, ?)", keyId, now);
  }

  /** Whether `keyId`, held by `userId`, is in use here now: not revoked lately, its holder a member. */
  async inUse(keyId: string, userId: string, now: number): Promise<boolean> {
    const revoked = this.host.sql
      .exec("SELECT 1 FROM revoked_keys WHERE key_id = ? AND revoked_at >= ?", keyId, now - REVOKED_MEMORY_MS)
      .toArray();
    if (revoked.length > 0) return false;
    await this.directory.load(VOUCH_DIRECTORY_MS);
    return this.directory.roleOf(userId) !== null;
  }
}
