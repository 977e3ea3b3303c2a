/**
 * A device key's id and the challenge a passkey signs to endorse it, and the base64url they are
 * written in: what the Worker needs of private mode's cryptography, apart from the envelope
 * (`envelope.ts`, which re-exports these), so the Worker's bundle carries no HPKE.
 *
 * Owns: the two formulas. Does not own: sealing and opening (`envelope.ts`), checking an
 * endorsement (the SDK). Environment-neutral: no Node and no Workers APIs here.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";

/** A device key's id: `dk_` and the first 32 hex characters of SHA-256 over the raw public key. */
export function deviceIdOf(publicKey: string): string {
  return `dk_${bytesToHex(sha256(fromBase64url(publicKey))).slice(0, 32)}`;
}

/**
 * The WebAuthn challenge a person's passkey signs to endorse a device key for a team:
 * base64url of SHA-256 over `tapgate-device-key/v1`, the team id and the key, one per line.
 */
export function deviceKeyChallenge(teamId: string, publicKey: string): string {
  return toBase64url(sha256(utf8ToBytes(["tapgate-device-key/v1", teamId, publicKey].join("\n"))));
}

export function toBase64url(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function fromBase64url(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
