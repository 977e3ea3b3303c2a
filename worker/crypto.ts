import { createHash, createHmac, timingSafeEqual } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/**
 * `length` uniformly random characters of `alphabet` (at most 256 of them): rejection sampling,
 * so no character is likelier than another.
 */
export function randomString(alphabet: string, length: number): string {
  const n = alphabet.length;
  if (n < 1 || n > 256) throw new RangeError("the alphabet needs 1 to 256 characters");
  const usable = 256 - (256 % n); // bytes at or above this would favour the first characters
  let out = "";
  while (out.length < length) {
    for (const byte of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (byte < usable && out.length < length) out += alphabet[byte % n];
    }
  }
  return out;
}

/** `length` uniformly random base62 characters. */
export function randomBase62(length: number): string {
  return randomString(BASE62, length);
}

/** A 256-bit URL-safe secret (sign-in links, web sessions). */
export function randomToken(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
}

/** Synchronous on purpose: the Durable Object hashes without yielding its input gate. */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/**
 * SHA-256 (hex) by the runtime's own digest: for the Worker's routes, which may yield. Hashing a
 * cookie or a key this way costs a fraction of `sha256Hex`'s stream machinery on every request.
 */
export async function digestHex(text: string): Promise<string> {
  return Buffer.from(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))).toString("hex");
}

/** HMAC-SHA-256 (hex): a keyed hash, for values too guessable to store as a plain hash (IP addresses). */
export function hmacSha256Hex(key: string, text: string): string {
  return createHmac("sha256", key).update(text).digest("hex");
}

/**
 * Whether two secrets are equal, in time that does not depend on where they differ (nor on their
 * lengths: both are hashed to 32 bytes first). For secrets a caller presents, such as a webhook's token.
 */
export function constantTimeEqual(given: string, expected: string): boolean {
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** A fresh 256-bit secret to hand out once, and the SHA-256 to store in its place. */
export function newSecret(): { token: string; hash: string } {
  const token = randomToken();
  return { token, hash: sha256Hex(token) };
}

/** Ids like `usr_…`, `team_…`: a prefix and 22 base62 characters (≈131 random bits). */
export function newId(prefix: string): string {
  return `${prefix}_${randomBase62(22)}`;
}

/** Agent API keys: `tg_` + 43 base62 characters (≈256 bits). */
export function newApiKey(): { key: string; prefix: string; hash: string } {
  const key = `tg_${randomBase62(43)}`;
  return { key, prefix: key.slice(0, 9), hash: sha256Hex(key) };
}

export const API_KEY_PATTERN = /^tg_[0-9A-Za-z]{43}$/;

/** JSON with object keys sorted at every level: the input of `requestHash` (shared with `sdk/src`). */
export { canonicalJson } from "../sdk/src/canonical-json";
