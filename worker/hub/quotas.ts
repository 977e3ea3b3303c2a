/**
 * The team's quotas on requests, counted across all its sessions: pending requests per team and
 * per API key, and requests created per key per minute (a token bucket per key). A SessionGate
 * asks here before it holds a request (`admit`), and its news of the request's end releases
 * the slot (`release`). A lost release heals itself: a slot counts only until the request's
 * expiry, which no request outlives.
 *
 * Owns: the `quota_pending` and `quota_buckets` tables and the verdicts. Does not own: the
 * limits (the team policy, sent by the gate with each ask), the bucket's arithmetic
 * (`token-bucket.ts`), or showing a refusal (the shell sends it on the live feed).
 */
import type { QuotaLimit, TeamLimits } from "../../sdk/src/human/policy";
import type { QuotaAsk, QuotaVerdict } from "./api";
import type { HubHost } from "./host";
import { type Bucket, type BucketRate, fullAt, take } from "./token-bucket";

/** A refusal is shown on the live feed at most once per key and limit in this long. */
export const REFUSAL_NOTICE_MS = 10_000;
/** How long a release that came before its admit is remembered (the gate waits 2 s at most). */
const LATE_ADMIT_MS = 60_000;
const MAX_RELEASED = 10_000;

export class Quotas {
  /** When each key's refusal for each limit was last shown (in memory: a restart may show one more). */
  private readonly shown = new Map<string, number>();

  /**
   * Releases that found no slot, by approval id and until when: a gate that stopped waiting
   * releases at once, and its late admit must not count a slot nobody will release (in memory:
   * the late admit comes within seconds, from an RPC a restart would have failed).
   */
  private readonly released = new Map<string, number>();

  constructor(private readonly host: HubHost) {}

  /** Counts the request in, or says which limit it is over and when to try again. */
  admit(ask: QuotaAsk, now: number): QuotaVerdict {
    const { sql } = this.host;
    sql.exec("DELETE FROM quota_pending WHERE expires_at <= ?", now);
    sql.exec("DELETE FROM quota_buckets WHERE full_at <= ?", now);
    this.forgetReleasedBefore(now);
    if (this.released.has(ask.approvalId)) return { ok: false, limit: "pendingPerKey", retryAfterMs: 0 };
    // The same ask again (a retried RPC) is the same slot.
    if (sql.exec("SELECT 1 FROM quota_pending WHERE approval_id = ?", ask.approvalId).toArray().length > 0) {
      return { ok: true };
    }
    const full = this.pendingOver(ask, now);
    if (full) return full;
    const rate = rateOf(ask.limits);
    const taken = take(this.bucket(ask.keyId), rate, now);
    if (!taken.ok) return { ok: false, limit: "requestsPerKeyPerMinute", retryAfterMs: taken.retryAfterMs };
    sql.exec(
      "INSERT OR REPLACE INTO quota_buckets (key_id, tokens, at, full_at) VALUES (?, ?, ?, ?)",
      ask.keyId,
      taken.bucket.tokens,
      taken.bucket.at,
      fullAt(taken.bucket, rate),
    );
    sql.exec(
      "INSERT INTO quota_pending (approval_id, key_id, session_id, expires_at) VALUES (?, ?, ?, ?)",
      ask.approvalId,
      ask.keyId,
      ask.sessionId,
      ask.expiresAt,
    );
    return { ok: true };
  }

  /** The request ended (or was never held): its slot is free, and a late admit of it counts nothing. */
  release(approvalId: string, now = Date.now()): void {
    const { rowsWritten } = this.host.sql.exec("DELETE FROM quota_pending WHERE approval_id = ?", approvalId);
    if (rowsWritten > 0) return;
    if (this.released.size >= MAX_RELEASED) this.released.clear();
    this.released.set(approvalId, now + LATE_ADMIT_MS);
  }

  private forgetReleasedBefore(now: number): void {
    for (const [id, until] of this.released) if (until <= now) this.released.delete(id);
  }

  /** Whether to show this refusal on the live feed: an agent retrying in a loop shows once per window. */
  shouldShow(keyId: string, limit: QuotaLimit, now: number): boolean {
    const key = `${keyId}:${limit}`;
    if (now - (this.shown.get(key) ?? Number.NEGATIVE_INFINITY) < REFUSAL_NOTICE_MS) return false;
    if (this.shown.size > 1_000) this.shown.clear();
    this.shown.set(key, now);
    return true;
  }

  /** How many requests count as pending now, for the team or one key. */
  pending(keyId?: string): number {
    const where = keyId === undefined ? "" : " WHERE key_id = ?";
    const bindings = keyId === undefined ? [] : [keyId];
    return this.host.sql.exec(`SELECT COUNT(*) AS n FROM quota_pending${where}`, ...bindings).one().n as number;
  }

  /** The team's or the key's pending limit when the ask would pass it; the wait is until the soonest expiry. */
  private pendingOver(ask: QuotaAsk, now: number): QuotaVerdict | null {
    const checks = [
      { limit: "pendingPerTeam" as const, max: ask.limits.pendingPerTeam, where: "1", bindings: [] },
      { limit: "pendingPerKey" as const, max: ask.limits.pendingPerKey, where: "key_id = ?", bindings: [ask.keyId] },
    ];
    for (const c of checks) {
      const row = this.host.sql
        .exec<{ n: number; soonest: number | null }>(
          `SELECT COUNT(*) AS n, MIN(expires_at) AS soonest FROM quota_pending WHERE ${c.where}`,
          ...c.bindings,
        )
        .one();
      if (row.n >= c.max) {
        return { ok: false, limit: c.limit, retryAfterMs: Math.max(1, (row.soonest ?? now) - now) };
      }
    }
    return null;
  }

  private bucket(keyId: string): Bucket | null {
    const row = this.host.sql
      .exec<{ tokens: number; at: number }>("SELECT tokens, at FROM quota_buckets WHERE key_id = ?", keyId)
      .toArray()[0];
    return row ? { tokens: row.tokens, at: row.at } : null;
  }
}

function rateOf(limits: TeamLimits): BucketRate {
  return { perMinute: limits.requestsPerKeyPerMinute, burst: limits.burstPerKey };
}
