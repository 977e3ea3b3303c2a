/**
 * One Web Push request, built the way RFC 8291 and RFC 8292 say: the payload encrypted with
 * `aes128gcm` by http_ece (the web-push-libs encoder that the `web-push` package itself calls),
 * and the VAPID JWT signed by WebCrypto (ES256). This is what `web-push`'s
 * `generateRequestDetails` did, without the rest of that package (its PEM conversion pulled
 * bn.js and asn1.js, its sender an HTTP agent stack) into the Worker's bundle.
 *
 * Owns: the request's headers and encrypted body, and the VAPID key import (cached per
 * isolate). Does not own: which subscriptions are valid, sending it, or what a status means
 * (`web-push.ts`). `test/worker/push.test.ts` decrypts every body with http_ece and verifies
 * every JWT against the public key, independently of this file.
 */
import { createECDH, randomBytes } from "node:crypto";
import ece from "http_ece";

/** How long a VAPID JWT is valid: web-push's default, half of RFC 8292's 24 h ceiling. */
const VAPID_EXPIRY_S = 12 * 60 * 60;

export interface VapidKeys {
  publicKey: string;
  privateKey: string;
  subject: string;
}

export interface PushRequest {
  endpoint: string;
  headers: Record<string, string>;
  body: Uint8Array;
}

const signingKeys = new Map<string, Promise<CryptoKey>>();

/** The VAPID private key (base64url `d`) as an ECDSA key, with `x` and `y` from the public key. */
function signingKey(vapid: VapidKeys): Promise<CryptoKey> {
  const cacheKey = `${vapid.publicKey}.${vapid.privateKey}`;
  let key = signingKeys.get(cacheKey);
  if (!key) {
    const point = Buffer.from(vapid.publicKey, "base64url");
    if (point.length !== 65 || point[0] !== 0x04)
      throw new Error("VAPID public key is not an uncompressed P-256 point");
    const jwk: JsonWebKey = {
      kty: "EC",
      crv: "P-256",
      d: vapid.privateKey,
      x: point.subarray(1, 33).toString("base64url"),
      y: point.subarray(33).toString("base64url"),
    };
    key = crypto.subtle.importKey("jwk", jwk, { name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);
    key.catch(() => signingKeys.delete(cacheKey));
    signingKeys.set(cacheKey, key);
  }
  return key;
}

const base64url = (text: string) => Buffer.from(text).toString("base64url");

/** `vapid t=<JWT>, k=<public key>` for the push service at `audience` (its origin). */
export async function vapidAuthorization(audience: string, vapid: VapidKeys, nowMs = Date.now()): Promise<string> {
  const header = base64url(JSON.stringify({ typ: "JWT", alg: "ES256" }));
  const claims = base64url(
    JSON.stringify({ aud: audience, exp: Math.floor(nowMs / 1000) + VAPID_EXPIRY_S, sub: vapid.subject }),
  );
  // WebCrypto's ECDSA signature is r ‖ s, which is exactly JWS's ES256 form.
  const signature = await crypto.subtle.sign(
    { name: "ECDSA", hash: "SHA-256" },
    await signingKey(vapid),
    new TextEncoder().encode(`${header}.${claims}`),
  );
  return `vapid t=${header}.${claims}.${Buffer.from(signature).toString("base64url")}, k=${vapid.publicKey}`;
}

/** The encrypted body (a fresh sender key and salt per push) and every header the push service reads. */
export async function pushRequest(
  subscription: { endpoint: string; keys: { p256dh: string; auth: string } },
  payload: string,
  options: { ttlSeconds: number; urgency: "high" | "normal"; topic?: string },
  vapid: VapidKeys,
): Promise<PushRequest> {
  const sender = createECDH("prime256v1");
  sender.generateKeys();
  const body: Buffer = ece.encrypt(Buffer.from(payload), {
    version: "aes128gcm",
    dh: subscription.keys.p256dh,
    privateKey: sender,
    salt: randomBytes(16).toString("base64url"),
    authSecret: subscription.keys.auth,
  });
  const headers: Record<string, string> = {
    TTL: String(Math.max(0, Math.floor(options.ttlSeconds))),
    "Content-Length": String(body.length),
    "Content-Type": "application/octet-stream",
    "Content-Encoding": "aes128gcm",
    Authorization: await vapidAuthorization(new URL(subscription.endpoint).origin, vapid),
    Urgency: options.urgency,
  };
  if (options.topic) headers.Topic = options.topic;
  return { endpoint: subscription.endpoint, headers, body: new Uint8Array(body) };
}
