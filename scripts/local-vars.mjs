/**
 * Local-mode settings for `npm start` and the tests: the dev outbox and a fresh VAPID key pair
 * (production keeps its own as secrets: `wrangler secret put VAPID_PRIVATE_KEY`, …).
 */
import webpush from "web-push";

/** @returns {Record<string, string>} */
export function localVars() {
  const { publicKey, privateKey } = webpush.generateVAPIDKeys();
  return {
    DEV_OUTBOX: "1",
    VAPID_PUBLIC_KEY: publicKey,
    VAPID_PRIVATE_KEY: privateKey,
    VAPID_SUBJECT: "mailto:tapgate@localhost",
  };
}
