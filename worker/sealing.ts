/**
 * AES-256-GCM sealing of a secret the Worker must read again (a channel's bot token, a webhook's
 * signing secret): a key derived with HKDF-SHA-256 from a deployment secret, a random 12-byte IV
 * per seal, and the row the secret belongs to as additional data, so a sealed value copied to
 * another row does not open.
 *
 * Owns: the key derivation and the `<iv>.<ciphertext+tag>` text (base64url). Does not own which
 * deployment secret a caller uses or the version prefix it stores (`channels/secret-box.ts`,
 * `webhooks/secret-box.ts`).
 */
const encoder = new TextEncoder();

/** The AES-GCM key for `material`, separated by `salt` (one per kind of secret). */
export async function sealingKey(material: string, salt: string): Promise<CryptoKey> {
  const base = await crypto.subtle.importKey("raw", encoder.encode(material), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: encoder.encode(salt), info: encoder.encode("v1") },
    base,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

const toBase64Url = (bytes: ArrayBuffer | Uint8Array) => Buffer.from(bytes as Uint8Array).toString("base64url");
const fromBase64Url = (text: string) => new Uint8Array(Buffer.from(text, "base64url"));

/** `<iv>.<ciphertext+tag>`, bound to `context`. */
export async function seal(key: CryptoKey, plaintext: string, context: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: encoder.encode(context) },
    key,
    encoder.encode(plaintext),
  );
  return `${toBase64Url(iv)}.${toBase64Url(sealed)}`;
}

/** The plaintext of `seal`'s text; throws on another key, another context, a bad shape or any tampering. */
export async function unseal(key: CryptoKey, sealed: string, context: string): Promise<string> {
  const [iv, body, ...rest] = sealed.split(".");
  if (!iv || !body || rest.length > 0) throw new Error("not a sealed secret");
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: fromBase64Url(iv), additionalData: encoder.encode(context) },
    key,
    fromBase64Url(body),
  );
  return new TextDecoder().decode(plain);
}
