/**
 * Sealing a private request's content to devices and opening it on one (docs/threat-model.md
 * "Private mode"): the plaintext is encrypted once with a random AES-256-GCM key, and that key is
 * HPKE-sealed (RFC 9180, `@hpke/core`) to each device's P-256 key. Both carry `requestHash` as
 * associated data, so a ciphertext moved to another request, or a swapped hash, does not open.
 *
 * Owns: the envelope and the hash. Does not own: which devices to seal to (the SDK checks
 * endorsements, `sdk/src/private/recipients.ts`) or where private keys live (the PWA).
 * Environment-neutral: WebCrypto only (Node ≥ 20, browsers, service workers).
 */
import { Aes256Gcm, CipherSuite, DhkemP256HkdfSha256, HkdfSha256 } from "@hpke/core";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import type { Risk } from "../approval.js";
import { canonicalJson } from "../canonical-json.js";
import {
  SEALED_ALG,
  type SealedPlaintext,
  type SealedRequest,
  type SealedWrap,
  sealedPlaintextSchema,
} from "./contract.js";
import { deviceIdOf, fromBase64url, toBase64url } from "./device-id.js";

export { deviceIdOf, deviceKeyChallenge, fromBase64url, toBase64url } from "./device-id.js";

type CryptoKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

/** A device's key pair: `crypto.subtle.generateKey`'s for P-256 ECDH. */
export interface DeviceKeyPair {
  publicKey: CryptoKey;
  privateKey: CryptoKey;
}

const suite = new CipherSuite({ kem: new DhkemP256HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() });
const INFO = utf8ToBytes("tapgate/private/v1");

/** SHA-256 hex of the plaintext's canonical JSON: the approval's `requestHash`. */
export function requestHashOf(plaintext: SealedPlaintext): string {
  return bytesToHex(sha256(utf8ToBytes(canonicalJson(plaintext))));
}

/** Seals `plaintext` to every device in `to` (their raw P-256 keys, base64url). */
export async function sealRequest(a: {
  plaintext: SealedPlaintext;
  risk: Risk;
  to: ReadonlyArray<{ deviceId: string; publicKey: string }>;
}): Promise<SealedRequest> {
  const text = utf8ToBytes(JSON.stringify(a.plaintext));
  const requestHash = requestHashOf(a.plaintext);
  const aad = utf8ToBytes(requestHash);
  const contentKey = crypto.getRandomValues(new Uint8Array(32));
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const aes = await crypto.subtle.importKey("raw", contentKey, "AES-GCM", false, ["encrypt"]);
  const ciphertext = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: aad }, aes, text);
  const recipients: SealedWrap[] = [];
  for (const device of a.to) {
    const recipientPublicKey = await suite.kem.deserializePublicKey(fromBase64url(device.publicKey).buffer);
    const sealed = await suite.seal({ recipientPublicKey, info: INFO }, contentKey, aad);
    recipients.push({
      deviceId: device.deviceId,
      enc: toBase64url(new Uint8Array(sealed.enc)),
      key: toBase64url(new Uint8Array(sealed.ct)),
    });
  }
  return {
    v: 1,
    alg: SEALED_ALG,
    requestHash,
    risk: a.risk,
    bytes: text.byteLength,
    ...(a.plaintext.fingerprint && { fingerprint: a.plaintext.fingerprint }),
    iv: toBase64url(iv),
    ciphertext: toBase64url(new Uint8Array(ciphertext)),
    recipients,
  };
}

export type Opened =
  | { ok: true; plaintext: SealedPlaintext }
  /** Sealed before this device's key existed (or without it): nothing to open with. */
  | { ok: false; reason: "not_a_recipient" }
  /** It does not open, or opens to something other than what `requestHash` commits to. */
  | { ok: false; reason: "altered" };

/**
 * Opens a sealed request with one device's key pair and checks it against the approval's
 * `requestHash` (what the decision will bind): the plaintext's hash, the sealed hash and the
 * fingerprint the service holds must all agree, or it is `altered` and must not be shown.
 */
export async function openSealed(
  sealed: SealedRequest,
  approvalRequestHash: string,
  device: { deviceId: string; keyPair: DeviceKeyPair },
): Promise<Opened> {
  const wrap = sealed.recipients.find((r) => r.deviceId === device.deviceId);
  if (!wrap) return { ok: false, reason: "not_a_recipient" };
  if (sealed.requestHash !== approvalRequestHash) return { ok: false, reason: "altered" };
  try {
    const aad = utf8ToBytes(approvalRequestHash);
    const enc = fromBase64url(wrap.enc).buffer;
    const contentKey = await suite.open(
      { recipientKey: device.keyPair, enc, info: INFO },
      fromBase64url(wrap.key),
      aad,
    );
    const aes = await crypto.subtle.importKey("raw", contentKey, "AES-GCM", false, ["decrypt"]);
    const iv = fromBase64url(sealed.iv);
    const text = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv, additionalData: aad },
      aes,
      fromBase64url(sealed.ciphertext),
    );
    const parsed = sealedPlaintextSchema.safeParse(JSON.parse(new TextDecoder().decode(text)));
    if (!parsed.success) return { ok: false, reason: "altered" };
    const plaintext = parsed.data;
    if (requestHashOf(plaintext) !== approvalRequestHash) return { ok: false, reason: "altered" };
    if (plaintext.fingerprint !== sealed.fingerprint) return { ok: false, reason: "altered" };
    return { ok: true, plaintext };
  } catch {
    return { ok: false, reason: "altered" };
  }
}

/** A new device key pair: P-256 ECDH, the private key not extractable (kept in IndexedDB as is). */
export async function newDeviceKeyPair(): Promise<{ keyPair: DeviceKeyPair; publicKey: string; deviceId: string }> {
  const keyPair = (await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, false, [
    "deriveBits",
  ])) as DeviceKeyPair;
  const publicKey = toBase64url(
    new Uint8Array((await crypto.subtle.exportKey("raw", keyPair.publicKey)) as ArrayBuffer),
  );
  return { keyPair, publicKey, deviceId: deviceIdOf(publicKey) };
}
