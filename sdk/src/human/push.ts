/**
 * Web Push: the VAPID key, this person's devices, and the payload a push carries to the service
 * worker. Payloads carry ids and short text only, never tool arguments.
 */
import { z } from "zod";
import { approvalStateSchema } from "../approval.js";
import { withVisibleTokens } from "../safe-text.js";
import { deviceIdSchema } from "./approvals.js";

export const pushPayloadSchema = z.discriminatedUnion("type", [
  z.object({
    v: z.literal(1),
    type: z.literal("approval"),
    approvalId: z.string(),
    title: z.string(),
    expiresAt: z.number(),
    /** `high`: the lock screen offers no action; allowing needs the card and a passkey. */
    risk: z.literal("high").optional(),
    /**
     * A private request (docs/human-api.md "Push payload"): `title` is then empty (its content is
     * sealed; the service worker opens the approval's `sealed` with the device's key) and
     * `sessionTitle` names the session it waits in.
     */
    private: z.literal(true).optional(),
    sessionTitle: z.string().max(256).optional(),
  }),
  z.object({ v: z.literal(1), type: z.literal("resolved"), approvalId: z.string(), state: approvalStateSchema }),
  z.object({ v: z.literal(1), type: z.literal("summary"), count: z.number() }),
  z.object({ v: z.literal(1), type: z.literal("test") }),
]);
export type PushPayload = z.infer<typeof pushPayloadSchema>;

/**
 * Declarative Web Push (WebKit: Safari, and iOS/iPadOS 18.4+): beside the payload above, the
 * notification the platform shows by itself when the service worker is not run (or shows
 * none). `mutable`: a service worker that is there still gets the push and shows its own (with
 * the receipts and the lock-screen Deny). Lock-screen text only: never tool arguments.
 */
export const declarativePushSchema = z.object({
  web_push: z.literal(8030),
  notification: z.object({
    title: z.string(),
    body: z.string(),
    /** An absolute URL of the app: the card, the pending list or the Devices screen. */
    navigate: z.url(),
    /** The same tag as the service worker's notification, so one replaces the other. */
    tag: z.string(),
    silent: z.boolean().optional(),
  }),
  mutable: z.literal(true),
});
export type DeclarativePush = z.infer<typeof declarativePushSchema>;

/** The words and tags of the notifications the service worker and the declarative part both show. */
export const SUMMARY_TAG = "tapgate-summary";
export const TEST_TAG = "tapgate-test";

/**
 * A request's notification title: the lock-screen title the hub chose, with direction overrides
 * and invisible characters made visible (lock screens render text raw), marked when high-risk.
 */
export function approvalTitle(message: {
  title: string;
  risk?: "high";
  private?: true;
  sessionTitle?: string | undefined;
}): string {
  const fallback = message.private ? privateRequestLine(message.sessionTitle) : "An agent is asking for permission";
  const title = withVisibleTokens(message.title || fallback).slice(0, 200);
  return message.risk === "high" ? `High risk: ${title}` : title;
}

/** What every surface that cannot open a private request says of it: where it waits, never what it is. */
export function privateRequestLine(sessionLabel: string | null | undefined): string {
  return `A request waits in ${sessionLabel?.trim() || "an agent session"} — open Tapgate`;
}

/**
 * A private request's session as the service can name it: the title it kept (none, for a hello
 * made in private mode: a title is often the prompt), else its agent and session id.
 */
export function privateSessionLabel(a: {
  sessionId: string;
  snapshot: { session: { title: string | null; agent: { name: string } | null } };
}): string {
  const { title, agent } = a.snapshot.session;
  if (title?.trim()) return title.trim();
  return `${agent ? `${agent.name} ` : "agent "}session ${a.sessionId}`;
}

export function summaryText(count: number): { title: string; body: string } {
  return { title: `${count} request${count === 1 ? "" : "s"} waiting`, body: "Open Tapgate to review them." };
}
export const TEST_TEXT = { title: "Tapgate test", body: "Notifications work on this device." } as const;

/** `GET /v1/push/key`. */
export const pushKeyAnswerSchema = z.object({ publicKey: z.string() });

/** A browser's PushSubscription, as `toJSON()` gives it. The Worker checks more (host, key points). */
export const pushSubscriptionShape = z.object({
  endpoint: z.string(),
  keys: z.object({ p256dh: z.string(), auth: z.string() }),
});
export type PushSubscriptionBody = z.infer<typeof pushSubscriptionShape>;

/** `POST /v1/devices`. */
export const deviceBodySchema = z.object({
  name: z.string().trim().min(1).max(64),
  subscription: pushSubscriptionShape,
});
export type DeviceBody = z.infer<typeof deviceBodySchema>;

export const deviceParamSchema = z.object({ id: deviceIdSchema });

export const savedDeviceSchema = z.object({ id: z.string(), name: z.string(), createdAt: z.number() });

/**
 * `GET /v1/devices`: this person's devices in this team. `health`: `failing` when its last three
 * pushes failed, `not_shown` when the push service took its last three but it showed none.
 */
export const deviceHealthSchema = z.enum(["ok", "failing", "not_shown"]);
export type DeviceHealth = z.infer<typeof deviceHealthSchema>;

/**
 * Of the requests pushed over the last 7 days (UTC days, today included), how many pushes the
 * push service was handed (`sent7d`, once per request and device) and how many the service
 * worker reported shown (`displayed7d`: its first `displayed` or `opened` receipt).
 * `displayedRatio` is `displayed7d / sent7d`, null with nothing sent.
 */
export const displayFiguresSchema = z.object({
  sent7d: z.number().int().nonnegative(),
  displayed7d: z.number().int().nonnegative(),
  displayedRatio: z.number().min(0).max(1).nullable(),
});
export type DisplayFigures = z.infer<typeof displayFiguresSchema>;

/** The push service a device's endpoint belongs to: Google's FCM (Chrome, Android), Apple, Mozilla, Microsoft's WNS. */
export const pushPlatformSchema = z.enum(["fcm", "apple", "mozilla", "windows"]);
export type PushPlatform = z.infer<typeof pushPlatformSchema>;
export const platformFiguresSchema = displayFiguresSchema.extend({ platform: pushPlatformSchema });
export type PlatformFigures = z.infer<typeof platformFiguresSchema>;

/** Under this share shown, with at least `DISPLAYED_MIN_SENT` sent, a device or platform is flagged. */
export const DISPLAYED_RATIO_MIN = 0.95;
/** Fewer pushes than this in 7 days say too little to flag anything. */
export const DISPLAYED_MIN_SENT = 5;

/** Whether these figures show too few pushes shown to trust notifications there. */
export function showsTooFew(figures: DisplayFigures): boolean {
  return (
    figures.sent7d >= DISPLAYED_MIN_SENT &&
    figures.displayedRatio !== null &&
    figures.displayedRatio < DISPLAYED_RATIO_MIN
  );
}

export const deviceSchema = savedDeviceSchema.extend({
  lastSeenAt: z.number().nullable(),
  health: deviceHealthSchema.default("ok"),
  ...displayFiguresSchema.shape,
});
export type Device = z.infer<typeof deviceSchema>;
/**
 * `GET /v1/devices`: this person's devices, each with its figures, and the team's figures per
 * push platform (every member's devices together; no device of anyone else is named).
 */
export const deviceListSchema = z.object({ devices: z.array(deviceSchema), platforms: z.array(platformFiguresSchema) });
export type DeviceList = z.infer<typeof deviceListSchema>;
