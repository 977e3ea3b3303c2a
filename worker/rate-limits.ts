/**
 * Rate limits of the routes anyone can call (sign-up, sign-in, passkey options) and of mail sent
 * to an address someone typed (invites): fixed windows counted in D1, so they hold across
 * isolates. Over a limit: `429 rate_limited` with `Retry-After` in seconds.
 *
 * A limit counts per address (the lower-cased email) and per client (`CF-Connecting-IP`, which
 * Cloudflare sets and overwrites; an IPv6 client by its /64). An address is counted before anyone
 * looks it up, so a known and an unknown address are limited alike and answered alike.
 *
 * Owns: the limits, the keys (HMAC with RATE_LIMIT_SECRET) and the 429. Does not own: the SQL
 * (`db/rate-limits.ts`), parsing addresses (`client-address.ts`).
 */
import type { Context, MiddlewareHandler } from "hono";
import { clientSubject } from "./client-address";
import { hmacSha256Hex, newSecret } from "./crypto";
import { countHits } from "./db";
import { DomainError } from "./errors";
import type { AppEnv, Env } from "./types";

export interface RateLimit {
  /** Names the counter; part of the hashed key. */
  bucket: string;
  limit: number;
  windowMs: number;
}

const MINUTE = 60 * 1000;

export const RATE_LIMITS = {
  /** Sign-up, sign-in and invite mail to one address (a link lives 15 minutes: more is no use). */
  mailPerAddress: { bucket: "mail-address", limit: 5, windowMs: 15 * MINUTE },
  /** The same mail, asked for by one client. */
  mailPerClient: { bucket: "mail-client", limit: 30, windowMs: 10 * MINUTE },
  /** Passkey challenges (each is a D1 row) one client may ask for. */
  passkeyOptionsPerClient: { bucket: "passkey-options-client", limit: 60, windowMs: 10 * MINUTE },
} as const satisfies Record<string, RateLimit>;

/** 429 with `Retry-After` in whole seconds (at least 1). */
export function rateLimited(retryAfterMs: number, message: string): DomainError {
  const seconds = String(Math.max(1, Math.ceil(retryAfterMs / 1000)));
  return new DomainError("rate_limited", message, { headers: { "Retry-After": seconds } });
}

/** The client's subject for per-client limits: its address, or its /64 for IPv6. */
export function clientOf(c: Context<AppEnv>): string {
  return clientSubject(c.req.header("CF-Connecting-IP"));
}

/**
 * Counts this request against each limit for its subject; throws 429 when any is exceeded (with
 * the longest wait among them). Every limit counts, even when another is already over.
 */
export async function enforceLimits(
  env: Env,
  checks: Array<{ limit: RateLimit; subject: string }>,
  message: string,
  now = Date.now(),
): Promise<void> {
  const secret = rateLimitSecret(env);
  const windows = checks.map(({ limit, subject }) => ({
    key: hmacSha256Hex(secret, `${limit.bucket}:${subject}`),
    windowStart: now - (now % limit.windowMs),
    windowMs: limit.windowMs,
    limit: limit.limit,
  }));
  const counts = await countHits(env.DB, windows, now);
  const waits = windows.filter((w, i) => (counts[i] ?? 0) > w.limit).map((w) => w.windowStart + w.windowMs - now);
  if (waits.length > 0) throw rateLimited(Math.max(...waits), message);
}

/** Mail to `email` asked for by this request's client: per address and per client. */
export function limitMail(c: Context<AppEnv>, email: string): Promise<void> {
  return enforceLimits(
    c.env,
    [
      { limit: RATE_LIMITS.mailPerAddress, subject: email.toLowerCase() },
      { limit: RATE_LIMITS.mailPerClient, subject: clientOf(c) },
    ],
    "too many emails asked for; wait a few minutes and check your inbox",
  );
}

/** A route limited per client only. */
export function limitPerClient(limit: RateLimit): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await enforceLimits(
      c.env,
      [{ limit, subject: clientOf(c) }],
      "too many requests from this address; try again later",
    );
    return next();
  };
}

/**
 * The key of the rate limits' hashes: a secret, so a leaked database does not give away
 * addresses (IPv4 is small enough to hash every one). Without RATE_LIMIT_SECRET each isolate makes
 * its own, so a limit still holds per isolate, and says so once.
 */
let isolateSecret: string | undefined;
export function rateLimitSecret(env: Env): string {
  if (env.RATE_LIMIT_SECRET) return env.RATE_LIMIT_SECRET;
  if (!isolateSecret) {
    isolateSecret = newSecret().token;
    console.warn(
      "RATE_LIMIT_SECRET is not set: rate limits use a per-isolate key (wrangler secret put RATE_LIMIT_SECRET)",
    );
  }
  return isolateSecret;
}
