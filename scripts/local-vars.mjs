/**
 * Local-mode settings for `npm start` and the tests: the dev outbox, a fresh VAPID key pair and a
 * rate-limit secret (production keeps its own as secrets: `wrangler secret put VAPID_PRIVATE_KEY`,
 * `wrangler secret put RATE_LIMIT_SECRET`, …).
 */
import { randomBytes } from "node:crypto";
import webpush from "web-push";

/** @returns {Record<string, string>} */
export function localVars() {
  const { publicKey, privateKey } = webpush.generateVAPIDKeys();
  return {
    DEV_OUTBOX: "1",
    VAPID_PUBLIC_KEY: publicKey,
    VAPID_PRIVATE_KEY: privateKey,
    VAPID_SUBJECT: "mailto:tapgate@localhost",
    RATE_LIMIT_SECRET: randomBytes(32).toString("base64url"),
  };
}
