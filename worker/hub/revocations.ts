/**
 * A revoked agent key reaches every session it opened, durably, from the team's hub: the
 * sessions to tell are written here before any is told (`revocation_fanout`), then told
 * REVOCATION_FANOUT_PER_RUN per invocation, REVOCATION_FANOUT_BATCH at a time (each gate denies
 * the key's pending requests `key_revoked` and closes its sockets). A gate that failed, or that
 * a hub evicted mid-call never heard back from, is told again from the hub's alarm, with
 * backoff, until it acknowledges. Until then the hub refuses the key at admission (`refuses`)
 * and vouches for no cached copy of it (`vouching.ts`, whose `revoked_keys` keeps the key while
 * its fan-out is on its way), so a gate that missed the revocation holds nothing new for it.
 *
 * Owns: the `revocation_fanout` table, the fan-out's order, bounds and retries. Does not own:
 * the revocation itself (D1, `team/keys.ts`), the revoked-key memory (`vouching.ts`), or what a
 * gate does with it (its state machine).
 */
import { REQUEST_BUDGET_MS, withDeadline } from "../deadline";
import { sessionGate } from "../gate/api";
import type { KeyRevocation } from "./api";
import type { HubHost } from "./host";
import { retryDelayMs } from "./push-queue";
import type { Vouching } from "./vouching";

/** At most this many gates are told at once (bounded concurrency). */
export const REVOCATION_FANOUT_BATCH = 20;
/**
 * At most this many gates are told per invocation (the revoking call, or one alarm), well under
 * the platform's subrequest limit; the rest wait in `revocation_fanout` for the next alarm.
 */
export const REVOCATION_FANOUT_PER_RUN = 40;
/** A gate being told counts as not told after this long (the hub was evicted mid-call): told again. */
const TELLING_MS = 60_000;

type Waiting = {
  key_id: string;
  session_id: string;
  attempts: number;
};

export class Revocations {
  constructor(
    private readonly host: HubHost,
    private readonly vouching: Vouching,
  ) {}

  /**
   * Key `keyId` was revoked in D1: remember it, write down every session it opened, and tell the
   * first of them now. How many requests those denied, and how many sessions are not told yet
   * (they are told from the alarm).
   */
  async revoked(keyId: string, sessionIds: readonly string[], now: number): Promise<KeyRevocation> {
    const { sql } = this.host;
    for (const sessionId of sessionIds) {
      sql.exec(
        "INSERT OR REPLACE INTO revocation_fanout (key_id, session_id, attempts, next_at) VALUES (?, ?, 0, ?)",
        keyId,
        sessionId,
        now,
      );
    }
    this.vouching.keyRevoked(keyId, now);
    const deniedRequests = await this.fanOut(now, keyId);
    return { deniedRequests, unreachedSessions: this.waiting(keyId) };
  }

  /** Whether the hub refuses the key's requests: revoked lately, or its fan-out still on its way. */
  refuses(keyId: string, now: number): boolean {
    return this.vouching.revokedLately(keyId, now);
  }

  /** The alarm's share: the gates due to be told (again). */
  async alarm(now: number): Promise<void> {
    await this.fanOut(now);
  }

  /** How many sessions of `keyId` are not told yet. */
  private waiting(keyId: string): number {
    return this.host.sql.exec("SELECT COUNT(*) AS n FROM revocation_fanout WHERE key_id = ?", keyId).one().n as number;
  }

  /**
   * Tells the next REVOCATION_FANOUT_PER_RUN gates due (key `first`'s before others); how many
   * requests of `first` they denied. Rows are claimed before the first call (due again only
   * after TELLING_MS), so an alarm running alongside takes others; each leaves once its gate
   * acknowledged, or waits its backoff.
   */
  private async fanOut(now: number, first = ""): Promise<number> {
    const teamId = this.host.teamId();
    if (!teamId) return 0;
    const { sql } = this.host;
    const claimed = sql
      .exec<Waiting>(
        `UPDATE revocation_fanout SET next_at = ? WHERE rowid IN
           (SELECT rowid FROM revocation_fanout WHERE next_at <= ?
             ORDER BY key_id = ? DESC, next_at, key_id, session_id LIMIT ?)
         RETURNING key_id, session_id, attempts`,
        now + TELLING_MS,
        now,
        first,
        REVOCATION_FANOUT_PER_RUN,
      )
      .toArray();
    // Should this instance die mid-call, its alarm tells the claimed gates again.
    if (claimed.length > 0) await this.host.setAlarm(now + TELLING_MS);
    let denied = 0;
    for (let i = 0; i < claimed.length; i += REVOCATION_FANOUT_BATCH) {
      const batch = claimed.slice(i, i + REVOCATION_FANOUT_BATCH);
      const told = await Promise.allSettled(
        batch.map((r) =>
          withDeadline(
            sessionGate(this.host.env, teamId, r.session_id).revokeKey(teamId, r.key_id),
            REQUEST_BUDGET_MS,
            "gate.revokeKey",
          ),
        ),
      );
      told.forEach((t, j) => {
        const row = batch[j] as Waiting;
        if (t.status === "fulfilled") {
          if (row.key_id === first) denied += t.value;
          sql.exec("DELETE FROM revocation_fanout WHERE key_id = ? AND session_id = ?", row.key_id, row.session_id);
          return;
        }
        sql.exec(
          "UPDATE revocation_fanout SET attempts = ?, next_at = ? WHERE key_id = ? AND session_id = ?",
          row.attempts + 1,
          Date.now() + retryDelayMs(row.attempts),
          row.key_id,
          row.session_id,
        );
      });
    }
    this.vouching.pruneRevokedKeys(now);
    const next = sql.exec<{ at: number | null }>("SELECT MIN(next_at) AS at FROM revocation_fanout").one().at;
    if (next !== null) await this.host.setAlarm(next);
    return denied;
  }
}
