/**
 * Local-mode settings for `npm start` and the tests: the dev outbox, a fresh VAPID key pair and a
 * rate-limit secret (production keeps its own as secrets: `wrangler secret put VAPID_PRIVATE_KEY`,
 * `wrangler secret put RATE_LIMIT_SECRET`, …).
 */
import { createECDH, randomBytes } from "node:crypto";

/** @returns {Record<string, string>} */
export function localVars() {
  // A VAPID key pair is a P-256 key: the raw public point and the 32-byte private scalar, base64url.
  const vapid = createECDH("prime256v1");
  const publicKey = vapid.generateKeys().toString("base64url");
  const privateKey = vapid.getPrivateKey().toString("hex").padStart(64, "0");
  return {
    DEV_OUTBOX: "1",
    VAPID_PUBLIC_KEY: publicKey,
    VAPID_PRIVATE_KEY: Buffer.from(privateKey, "hex").toString("base64url"),
    VAPID_SUBJECT: "mailto:tapgate@localhost",
    RATE_LIMIT_SECRET: randomBytes(32).toString("base64url"),
  };
}

/** Listen addresses only this machine can reach. */
const LOOPBACK_LISTENERS = /^(localhost|127(\.\d{1,3}){3}|::1|\[::1\])$/i;

/**
 * The dev outbox's token for a server listening on `ip`: none on loopback (only this machine can
 * connect), a fresh one on anything else (`0.0.0.0`, a LAN address), where any host on the
 * network could send `Host: localhost` and `CF-Connecting-IP: 127.0.0.1`.
 * @param {string} ip
 * @returns {string | null}
 */
export function outboxTokenFor(ip) {
  return LOOPBACK_LISTENERS.test(ip) ? null : randomBytes(32).toString("base64url");
}
