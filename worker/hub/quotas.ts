/**
 * The team's quotas on requests, counted across all its sessions: pending requests per team and
 * per API key, and requests created per key per minute (a token bucket per key). A SessionGate
 * asks here before it holds a request (`admit`), and its news of the request's end releases
 * the slot (`release`). A lost release heals itself: a slot counts only until the request's
 * expiry, which no request outlives.
 *
 * An admission is answered before it is written: a write before the answer would hold the
 * answer, and the agent's request with it, until the hub's storage commits (the output gate).
 * What was admitted since the last write is kept in memory (`unwritten`), counted with the
 * stored rows, and written together once the answers have left (the next macrotask), so a
 * burst of admissions costs one commit. An instance that dies before that write loses those
 * slots: the team's count is that much low until they would have expired, as with a lost release.
 *
 * The operator's ceiling on the bytes a team stores per day is counted here too (`daily-bytes.ts`).
 *
 * Owns: the `quota_pending` and `quota_buckets` tables and the verdicts. Does not own: the
 * limits (the team policy, sent by the gate with each ask), the bucket's arithmetic
 * (`token-bucket.ts`), or showing a refusal (the shell sends it on the live feed).
 */
import type { QuotaLimit, TeamLimits } from "../../sdk/src/human/policy";
import { ceilingsOf } from "../ceilings";
import type { QuotaAsk, QuotaRefusal } from "./api";
import { DailyBytes } from "./daily-bytes";
import type { HubHost } from "./host";
import { type Bucket, type BucketRate, fullAt, take } from "./token-bucket";

/** A refusal is shown on the live feed at most once per key and limit in this long. */
export const REFUSAL_NOTICE_MS = 10_000;
/** How long a release that came before its admit is remembered (the gate waits 2 s at most). */
const LATE_ADMIT_MS = 60_000;
const MAX_RELEASED = 10_000;

interface Slot {
  keyId: string;
  sessionId: string;
  expiresAt: number;
}

export class Quotas {
  /** When each key's refusal for each limit was last shown (in memory: a restart may show one more). */
  private readonly shown = new Map<string, number>();

  /**
   * Releases that found no slot, by approval id and until when: a gate that stopped waiting
   * releases at once, and its late admit must not count a slot nobody will release (in memory:
   * the late admit comes within seconds, from an RPC a restart would have failed).
   */
  private readonly released = new Map<string, number>();

  /** Admitted and answered, not yet written: slots by approval id, and the keys' buckets after them. */
  private readonly unwritten = new Map<string, Slot>();
  private readonly unwrittenBuckets = new Map<string, { bucket: Bucket; fullAt: number }>();
  private writeQueued = false;

  private readonly daily: DailyBytes;
  /** The operator's ceiling on the bytes the team stores per day. */
  private readonly storedBytesPerDay: number;

  constructor(private readonly host: HubHost) {
    this.daily = new DailyBytes(host);
    this.storedBytesPerDay = ceilingsOf(host.env).storedBytesPerTeamPerDay;
  }

  /** Counts the request in, or says which limit it is over and when to try again. */
  admit(ask: QuotaAsk, now: number): { ok: true } | QuotaRefusal {
    this.forgetReleasedBefore(now);
    if (this.released.has(ask.approvalId)) return { ok: false, limit: "pendingPerKey", retryAfterMs: 0 };
    // The same ask again (a retried RPC) is the same slot.
    if (this.unwritten.has(ask.approvalId) || this.stored(ask.approvalId, now)) return { ok: true };
    const full = this.pendingOver(ask, now);
    if (full) return full;
    const rate = rateOf(ask.limits);
    const taken = take(this.bucket(ask.keyId, now), rate, now);
    if (!taken.ok) return { ok: false, limit: "requestsPerKeyPerMinute", retryAfterMs: taken.retryAfterMs };
    // Last: a request refused for another limit stores nothing and counts nothing today.
    const stored = this.daily.take(ask.storedBytes ?? 0, this.storedBytesPerDay, now);
    if (!stored.ok) return { ok: false, limit: "storedBytesPerTeamPerDay", retryAfterMs: stored.retryAfterMs };
    this.unwrittenBuckets.set(ask.keyId, { bucket: taken.bucket, fullAt: fullAt(taken.bucket, rate) });
    this.unwritten.set(ask.approvalId, { keyId: ask.keyId, sessionId: ask.sessionId, expiresAt: ask.expiresAt });
    this.queueWrite();
    return { ok: true };
  }

  /** The request ended (or was never held): its slot is free, and a late admit of it counts nothing. */
  release(approvalId: string, now = Date.now()): void {
    if (this.unwritten.delete(approvalId)) return;
    const { rowsWritten } = this.host.sql.exec("DELETE FROM quota_pending WHERE approval_id = ?", approvalId);
    if (rowsWritten > 0) return;
    if (this.released.size >= MAX_RELEASED) this.released.clear();
    this.released.set(approvalId, now + LATE_ADMIT_MS);
  }

  /** The key holding `approvalId`'s slot, or null when none is held for it. */
  keyOf(approvalId: string): string | null {
    const unwritten = this.unwritten.get(approvalId);
    if (unwritten) return unwritten.keyId;
    const [row] = this.host.sql
      .exec<{ key_id: string }>("SELECT key_id FROM quota_pending WHERE approval_id = ?", approvalId)
      .toArray();
    return row?.key_id ?? null;
  }

  /** Writes what was admitted since the last write, and forgets what expired. */
  private write(now = Date.now()): void {
    this.writeQueued = false;
    const { sql } = this.host;
    sql.exec("DELETE FROM quota_pending WHERE expires_at <= ?", now);
    sql.exec("DELETE FROM quota_buckets WHERE full_at <= ?", now);
    for (const [approvalId, slot] of this.unwritten) {
      sql.exec(
        "INSERT OR REPLACE INTO quota_pending (approval_id, key_id, session_id, expires_at) VALUES (?, ?, ?, ?)",
        approvalId,
        slot.keyId,
        slot.sessionId,
        slot.expiresAt,
      );
    }
    for (const [keyId, { bucket, fullAt }] of this.unwrittenBuckets) {
      sql.exec(
        "INSERT OR REPLACE INTO quota_buckets (key_id, tokens, at, full_at) VALUES (?, ?, ?, ?)",
        keyId,
        bucket.tokens,
        bucket.at,
        fullAt,
      );
    }
    this.unwritten.clear();
    this.unwrittenBuckets.clear();
    this.daily.write();
  }

  /** After the answers of this turn have left: a timer, not a microtask, which would run before them. */
  private queueWrite(): void {
    if (this.writeQueued) return;
    this.writeQueued = true;
    setTimeout(() => this.write(), 0);
  }

  /** Whether the slot is stored and still counts (an expired one is no slot, as the count says). */
  private stored(approvalId: string, now: number): boolean {
    const found = this.host.sql.exec(
      "SELECT 1 FROM quota_pending WHERE approval_id = ? AND expires_at > ?",
      approvalId,
      now,
    );
    return found.toArray().length > 0;
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
  pending(keyId?: string, now = Date.now()): number {
    return this.count(keyId, now).n;
  }

  /** Pending slots not yet expired, stored and unwritten, for the team or one key, with the soonest expiry. */
  private count(keyId: string | undefined, now: number): { n: number; soonest: number | null } {
    const where = keyId === undefined ? "" : " AND key_id = ?";
    const bindings = keyId === undefined ? [] : [keyId];
    const row = this.host.sql
      .exec<{ n: number; soonest: number | null }>(
        `SELECT COUNT(*) AS n, MIN(expires_at) AS soonest FROM quota_pending WHERE expires_at > ?${where}`,
        now,
        ...bindings,
      )
      .one();
    let { n, soonest } = row;
    for (const slot of this.unwritten.values()) {
      if (slot.expiresAt <= now || (keyId !== undefined && slot.keyId !== keyId)) continue;
      n++;
      soonest = soonest === null ? slot.expiresAt : Math.min(soonest, slot.expiresAt);
    }
    return { n, soonest };
  }

  /** The team's or the key's pending limit when the ask would pass it; the wait is until the soonest expiry. */
  private pendingOver(ask: QuotaAsk, now: number): QuotaRefusal | null {
    const checks = [
      { limit: "pendingPerTeam" as const, max: ask.limits.pendingPerTeam, keyId: undefined },
      { limit: "pendingPerKey" as const, max: ask.limits.pendingPerKey, keyId: ask.keyId },
    ];
    for (const c of checks) {
      const { n, soonest } = this.count(c.keyId, now);
      if (n >= c.max) return { ok: false, limit: c.limit, retryAfterMs: Math.max(1, (soonest ?? now) - now) };
    }
    return null;
  }

  /** The key's bucket as of its last take (null: full); a bucket refilled by `now` is as good as none. */
  private bucket(keyId: string, now: number): Bucket | null {
    const unwritten = this.unwrittenBuckets.get(keyId);
    if (unwritten) return unwritten.fullAt <= now ? null : unwritten.bucket;
    const row = this.host.sql
      .exec<{ tokens: number; at: number }>(
        "SELECT tokens, at FROM quota_buckets WHERE key_id = ? AND full_at > ?",
        keyId,
        now,
      )
      .toArray()[0];
    return row ? { tokens: row.tokens, at: row.at } : null;
  }
}

function rateOf(limits: TeamLimits): BucketRate {
  return { perMinute: limits.requestsPerKeyPerMinute, burst: limits.burstPerKey };
}
