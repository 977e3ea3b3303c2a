/**
 * Sealing the tokens a team connects (a Slack bot token, a PagerDuty routing key) before they
 * reach D1: AES-256-GCM (WebCrypto) under a key derived with HKDF-SHA-256 from the deployment's
 * `CHANNEL_SECRET_KEY`, a random 12-byte IV per seal, and a `context` (e.g. `${teamId}:slack`) as
 * additional data, so a sealed value copied to another team or channel does not open.
 *
 * Format: `v1.<iv base64url>.<ciphertext+tag base64url>`. Owns: the format and the key derivation.
 * Does not own: where sealed values are stored (`worker/db/channels.ts`).
 */
import type { Env } from "../types";

const VERSION = "v1";
const encoder = new TextEncoder();

async function sealingKey(env: Env): Promise<CryptoKey> {
  const secret = env.CHANNEL_SECRET_KEY;
  if (!secret) throw new Error("CHANNEL_SECRET_KEY is not set");
  const material = await crypto.subtle.importKey("raw", encoder.encode(secret), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: encoder.encode("tapgate channel secrets"), info: encoder.encode(VERSION) },
    material,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

const toBase64Url = (bytes: ArrayBuffer | Uint8Array) => Buffer.from(bytes as Uint8Array).toString("base64url");
const fromBase64Url = (text: string) => new Uint8Array(Buffer.from(text, "base64url"));

export async function sealSecret(env: Env, plaintext: string, context: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: encoder.encode(context) },
    await sealingKey(env),
    encoder.encode(plaintext),
  );
  return `${VERSION}.${toBase64Url(iv)}.${toBase64Url(sealed)}`;
}

/** The plaintext; throws on another version, another context, another key or any tampering. */
export async function openSecret(env: Env, sealed: string, context: string): Promise<string> {
  const [version, iv, body, ...rest] = sealed.split(".");
  if (version !== VERSION || !iv || !body || rest.length > 0) throw new Error("not a sealed secret");
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: fromBase64Url(iv), additionalData: encoder.encode(context) },
    await sealingKey(env),
    fromBase64Url(body),
  );
  return new TextDecoder().decode(plain);
}
