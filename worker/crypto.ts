import { createHash } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `length` uniformly random base62 characters (rejection sampling, no modulo bias). */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

/** A 256-bit URL-safe secret (sign-in links, web sessions). */
export function randomToken(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
}

/** Synchronous on purpose: the Durable Object hashes without yielding its input gate. */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
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

/** JSON with object keys sorted at every level: the input of `requestHash`. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}
