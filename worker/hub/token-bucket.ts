/**
 * A token bucket, as pure functions: `burst` tokens at most, refilled at `perMinute` tokens a
 * minute; each request takes one. No state, no I/O (quotas.ts keeps the buckets in SQLite), so
 * token-bucket.test.ts runs under Node.
 */

export interface Bucket {
  /** Tokens left at `at` (fractional while refilling). */
  tokens: number;
  at: number;
}

export interface BucketRate {
  perMinute: number;
  burst: number;
}

const MINUTE = 60_000;

/** The bucket at `now`: refilled for the time since `at`, never over `burst`. A new key's bucket is full. */
export function refill(bucket: Bucket | null, rate: BucketRate, now: number): Bucket {
  if (!bucket) return { tokens: rate.burst, at: now };
  const elapsed = Math.max(0, now - bucket.at);
  return { tokens: Math.min(rate.burst, bucket.tokens + (elapsed * rate.perMinute) / MINUTE), at: now };
}

export type Take = { ok: true; bucket: Bucket } | { ok: false; bucket: Bucket; retryAfterMs: number };

/** Takes one token at `now`, or says how long until one is there. */
export function take(bucket: Bucket | null, rate: BucketRate, now: number): Take {
  const current = refill(bucket, rate, now);
  if (current.tokens >= 1) return { ok: true, bucket: { tokens: current.tokens - 1, at: now } };
  const retryAfterMs = Math.ceil(((1 - current.tokens) * MINUTE) / rate.perMinute);
  return { ok: false, bucket: current, retryAfterMs };
}

/** When a bucket left alone is full again: from then on it is the same as no bucket. */
export function fullAt(bucket: Bucket, rate: BucketRate): number {
  return bucket.at + Math.ceil(((rate.burst - bucket.tokens) * MINUTE) / rate.perMinute);
}
