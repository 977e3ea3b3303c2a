/**
 * Web Push: the VAPID key, this person's devices, and the payload a push carries to the service
 * worker. Payloads carry ids and short text only, never tool arguments.
 */
import { z } from "zod";
import { approvalStateSchema } from "../approval.js";
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
  }),
  z.object({ v: z.literal(1), type: z.literal("resolved"), approvalId: z.string(), state: approvalStateSchema }),
  z.object({ v: z.literal(1), type: z.literal("summary"), count: z.number() }),
  z.object({ v: z.literal(1), type: z.literal("test") }),
]);
export type PushPayload = z.infer<typeof pushPayloadSchema>;

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

/** `GET /v1/devices`: this person's devices in this team. */
export const deviceSchema = savedDeviceSchema.extend({ lastSeenAt: z.number().nullable() });
export type Device = z.infer<typeof deviceSchema>;
export const deviceListSchema = z.object({ devices: z.array(deviceSchema) });
