/**
 * Slack's request signing (v0): what proves an Events or Interactivity request came from Slack.
 * `X-Slack-Signature` must be `v0=` + the hex HMAC-SHA256 of `v0:{X-Slack-Request-Timestamp}:{raw
 * body}` keyed with the app's signing secret, and the timestamp within 5 minutes of now (either
 * way: a replayed or a forged-ahead request is refused alike). Compared in constant time.
 *
 * Owns: the check. Does not own: reading the request (`worker/routes/slack.ts`), the `401`.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

/** How far the signed timestamp may be from now, either way (Slack's own advice). */
export const SLACK_SIGNATURE_WINDOW_S = 5 * 60;

const TIMESTAMP = /^\d{1,12}$/;
const SIGNATURE = /^v0=[0-9a-f]{64}$/;

export interface SignedRequest {
  timestamp: string | undefined;
  signature: string | undefined;
  /** The body exactly as it arrived: the HMAC is over its bytes. */
  body: Uint8Array;
}

/** Whether Slack signed this request with `secret` within the window around `nowMs`. */
export function slackSignatureValid(secret: string, request: SignedRequest, nowMs: number): boolean {
  const { timestamp, signature, body } = request;
  if (!timestamp || !signature || !TIMESTAMP.test(timestamp) || !SIGNATURE.test(signature)) return false;
  if (Math.abs(Math.floor(nowMs / 1000) - Number(timestamp)) > SLACK_SIGNATURE_WINDOW_S) return false;
  const expected = createHmac("sha256", secret).update(`v0:${timestamp}:`).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(signature.slice(3), "hex"));
}

/** The `X-Slack-Signature` Slack would send for `body` at `timestamp` (tests and the fake Slack sign with it). */
export function slackSignature(secret: string, timestamp: string, body: string): string {
  return `v0=${createHmac("sha256", secret).update(`v0:${timestamp}:${body}`).digest("hex")}`;
}
