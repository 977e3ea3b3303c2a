/**
 * The rule fingerprint of a private request: HMAC-SHA256, under the team's rule key (which the
 * service never holds), of the canonical JSON of what a private standing rule matches on: the
 * tool kind, the command (or, without one, the title), the working directory and the host. A rule
 * made from a private card matches exactly these four; globs need plaintext and are not offered.
 *
 * Owns: the fingerprint and the rule key's format. Does not own: where the key is kept (the CLI's
 * config, `TAPGATE_RULE_KEY`) or matching (the gate compares fingerprints).
 * Environment-neutral.
 */
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { canonicalJson } from "../canonical-json.js";
import { fromBase64url, toBase64url } from "./device-id.js";

/** A rule key: `trk_` and 32 random bytes, base64url (43 characters). */
export const RULE_KEY_PATTERN = /^trk_[A-Za-z0-9_-]{43}$/;

export function newRuleKey(): string {
  return `trk_${toBase64url(crypto.getRandomValues(new Uint8Array(32)))}`;
}

export interface FingerprintFacts {
  kind: string;
  /** The shell command, or the tool's title when it runs none. */
  command: string;
  cwd: string | null;
  host: string | null;
}

export function ruleFingerprint(ruleKey: string, facts: FingerprintFacts): string {
  if (!RULE_KEY_PATTERN.test(ruleKey)) throw new Error("a rule key is trk_ and 43 base64url characters");
  const key = fromBase64url(ruleKey.slice(4));
  const text = canonicalJson({ v: 1, kind: facts.kind, command: facts.command, cwd: facts.cwd, host: facts.host });
  return bytesToHex(hmac(sha256, key, utf8ToBytes(text)));
}
