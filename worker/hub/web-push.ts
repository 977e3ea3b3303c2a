/**
 * Web Push: who may be pushed to (subscription validation, checked at subscribe AND at send,
 * so an edited row can never turn into a fetch to an internal address), what a push says, and
 * one encrypted send (aes128gcm + VAPID built by `push-request.ts`, delivered with our own
 * fetch so the status codes are ours to act on).
 *
 * Owns: the subscription schema, the payload shapes, the lock-screen title, the Topic header,
 * one send and what its status means. Does not own: queueing, retries or delivery tracking
 * (`push-queue.ts`), or which devices get a push (`directory.ts`). No Durable Object import:
 * it runs under plain Node (`web-push.test.ts`).
 */

import { z } from "zod";
import type { Approval } from "../../sdk/src/approval";
import {
  approvalTitle,
  type DeclarativePush,
  type PushPayload,
  type PushPlatform,
  privateRequestLine,
  privateSessionLabel,
  SUMMARY_TAG,
  summaryText,
  TEST_TAG,
  TEST_TEXT,
} from "../../sdk/src/human/push";
import { LOCK_SCREEN_TITLE_CHARS } from "../channels/card-allow";
import { sha256Hex } from "../crypto";
import type { ApprovalNews } from "./api";
import { pushRequest, type VapidKeys } from "./push-request";

const MAX_ENDPOINT_CHARS = 1000;

/** The push services browsers use, by platform (docs/limits.md, "Web Push"). Anything else is refused. */
const PUSH_HOSTS: Record<PushPlatform, (host: string) => boolean> = {
  fcm: (h) => h === "fcm.googleapis.com",
  apple: (h) => h === "web.push.apple.com",
  mozilla: (h) => /^[a-z0-9-]+(\.[a-z0-9-]+)*\.push\.services\.mozilla\.com$/.test(h),
  windows: (h) => /^[a-z0-9-]+(\.[a-z0-9-]+)*\.notify\.windows\.com$/.test(h),
};

/** The push platform of a stored (so already checked) endpoint; null for one no longer known. */
export function pushPlatformOf(endpoint: string): PushPlatform | null {
  const host = URL.canParse(endpoint) ? new URL(endpoint).hostname : "";
  const known = Object.entries(PUSH_HOSTS).find(([, matches]) => matches(host));
  return known ? (known[0] as PushPlatform) : null;
}

function endpointProblem(endpoint: string): string | null {
  if (endpoint.length > MAX_ENDPOINT_CHARS) return `endpoint is longer than ${MAX_ENDPOINT_CHARS} characters`;
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return "endpoint is not a URL";
  }
  if (url.protocol !== "https:") return "endpoint must use https";
  if (url.port !== "" && url.port !== "443") return "endpoint must use port 443";
  if (url.username || url.password) return "endpoint must not carry credentials";
  if (!Object.values(PUSH_HOSTS).some((known) => known(url.hostname)))
    return `endpoint host ${url.hostname} is not a known push service`;
  return null;
}

function base64urlBytes(value: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(value)) return null;
  return new Uint8Array(Buffer.from(value, "base64url"));
}

async function isP256Point(bytes: Uint8Array): Promise<boolean> {
  if (bytes.length !== 65 || bytes[0] !== 0x04) return false;
  try {
    // importKey checks that the point lies on the curve.
    await crypto.subtle.importKey("raw", bytes, { name: "ECDH", namedCurve: "P-256" }, false, []);
    return true;
  } catch {
    return false;
  }
}

export const pushSubscriptionSchema = z.object({
  endpoint: z.string().superRefine((endpoint, ctx) => {
    const problem = endpointProblem(endpoint);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  }),
  keys: z.object({
    p256dh: z.string().refine(async (key) => {
      const bytes = base64urlBytes(key);
      return bytes !== null && (await isP256Point(bytes));
    }, "p256dh must be a base64url 65-byte uncompressed P-256 point"),
    auth: z.string().refine((key) => base64urlBytes(key)?.length === 16, "auth must be 16 base64url-encoded bytes"),
  }),
});
export type PushSubscription = z.infer<typeof pushSubscriptionSchema>;

/** Payloads carry ids and short text only, never tool arguments (sdk/src/human/push.ts). */
export type { PushPayload } from "../../sdk/src/human/push";
export type { VapidKeys };

/** The lock screen shows the tool title or a generic line; never arguments. */
export function lockScreenTitle(approval: Approval, policy: ApprovalNews["lockScreen"]): string {
  // A private request's content is sealed: only where it waits (mail, chat channels, PagerDuty).
  if (approval.sealed) return privateRequestLine(privateSessionLabel(approval));
  // An elicitation's question, form or URL never leaves for a push service: only that there is one.
  if (approval.type === "elicitation") return "An agent is asking you a question";
  const title = approval.snapshot.toolCall.title;
  if (policy === "generic" || typeof title !== "string" || title.trim() === "")
    return "An agent is asking for permission";
  return title.length > LOCK_SCREEN_TITLE_CHARS ? `${title.slice(0, LOCK_SCREEN_TITLE_CHARS - 1)}…` : title;
}

/** What a push carries: the payload the service worker reads, and its declarative notification. */
export type PushMessage = PushPayload & Partial<DeclarativePush>;

/**
 * The payload with its declarative notification (`declarativePushSchema`) beside it, for the
 * platforms that show one without running the service worker. Its text is the service
 * worker's (the lock-screen title, never arguments); `resolved` gets none, since it closes a
 * notification and has nothing to show.
 */
export function pushMessage(payload: PushPayload, appOrigin: string): PushMessage {
  const at = (path: string) => new URL(path, appOrigin).href;
  const declarative = (notification: DeclarativePush["notification"]): PushMessage => ({
    ...payload,
    web_push: 8030,
    notification,
    mutable: true,
  });
  switch (payload.type) {
    case "approval":
      return declarative({
        title: approvalTitle(payload),
        body: "Open it in Tapgate to decide.",
        navigate: at(`/approvals/${encodeURIComponent(payload.approvalId)}`),
        tag: payload.approvalId,
      });
    case "summary":
      return declarative({ ...summaryText(payload.count), navigate: at("/"), tag: SUMMARY_TAG });
    case "test":
      return declarative({ ...TEST_TEXT, navigate: at("/devices"), tag: TEST_TAG });
    case "resolved":
      return payload;
  }
}

/** delivered: the push service took it · gone: drop the device · retry: try again later · rejected: give up. */
export type PushOutcome = "delivered" | "gone" | "retry" | "rejected";

export function outcomeOf(status: number): PushOutcome {
  if (status >= 200 && status < 300) return "delivered";
  if (status === 404 || status === 410) return "gone";
  if (status === 429 || status >= 500) return "retry";
  return "rejected";
}

/** The Topic header: one pending message per approval at the push service (≤ 32 base64url chars). */
export function pushTopic(approvalId: string): string {
  return Buffer.from(sha256Hex(approvalId), "hex").toString("base64url").slice(0, 32);
}

export async function sendPush(
  subscription: PushSubscription,
  payload: PushMessage,
  options: { ttlSeconds: number; urgency: "high" | "normal"; topic?: string },
  vapid: VapidKeys,
): Promise<PushOutcome> {
  const checked = await pushSubscriptionSchema.safeParseAsync(subscription);
  if (!checked.success) return "gone";
  const request = await pushRequest(checked.data, JSON.stringify(payload), options, vapid);
  try {
    const response = await fetch(request.endpoint, {
      method: "POST",
      headers: request.headers,
      body: request.body,
      // A redirect could point anywhere, including inside: never follow one.
      redirect: "manual",
      signal: AbortSignal.timeout(10_000),
    });
    await response.body?.cancel();
    return response.status >= 300 && response.status < 400 ? "rejected" : outcomeOf(response.status);
  } catch {
    return "retry"; // timeouts and network errors
  }
}
