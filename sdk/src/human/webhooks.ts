/**
 * Signed webhooks (`/v1/webhooks`, docs/human-api.md "Webhooks"): a team's endpoints, the events
 * each one takes, the secret shown once, and each endpoint's recent deliveries.
 *
 * Owns: the bodies and answers of the webhook routes, the event names and their bounds. Does not
 * own: which audit entry makes which event or how a delivery is signed and retried (the Worker's
 * `worker/webhooks/`).
 */
import { z } from "zod";

/**
 * The events an endpoint may take. `audit.appended` is every audit entry with its chain hash
 * (the stream a SIEM ingests); the others are the entries of one kind.
 */
export const WEBHOOK_EVENTS = [
  "approval.requested",
  "approval.resolved",
  "approval.escalated",
  "rule.created",
  "rule.ended",
  "member.changed",
  "audit.appended",
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export function isWebhookEvent(name: string): name is WebhookEvent {
  return (WEBHOOK_EVENTS as readonly string[]).includes(name);
}

/** Endpoints one team may have (`409 too_many_webhooks` past it). */
export const MAX_WEBHOOKS_PER_TEAM = 10;
/** The longest URL an endpoint may have. */
export const MAX_WEBHOOK_URL_CHARS = 2000;
/** Deliveries kept per endpoint (the newest; older ones are pruned) and listed by `GET /v1/webhooks`. */
export const WEBHOOK_DELIVERIES_KEPT = 50;
/** How long a delivery is retried (with backoff) before it is given up as `failed`. */
export const WEBHOOK_RETRY_WINDOW_MS = 24 * 60 * 60 * 1000;

/**
 * `POST /v1/webhooks`. The URL's rules (https on a public host; loopback http in local mode) and
 * the event names are checked by the Worker, which answers `webhook_url_not_allowed` and
 * `webhook_event_unknown` with the reason.
 */
export const createWebhookBodySchema = z.strictObject({
  url: z.string().min(1).max(MAX_WEBHOOK_URL_CHARS),
  events: z
    .array(z.string().min(1).max(64))
    .min(1, "name at least one event")
    .max(WEBHOOK_EVENTS.length)
    .refine((events) => new Set(events).size === events.length, "an event is named twice"),
});
export type CreateWebhookBody = z.infer<typeof createWebhookBodySchema>;

export const webhookParamSchema = z.object({ id: z.string().regex(/^whk_[0-9A-Za-z]{22}$/, "not a webhook id") });

/** `201` of `POST /v1/webhooks` and `200` of `POST /v1/webhooks/:id/rotate`: the secret, shown this once. */
export const webhookSecretSchema = z.object({
  id: z.string(),
  secret: z.string().regex(/^whsec_[A-Za-z0-9+/]+={0,2}$/),
});
export type WebhookSecret = z.infer<typeof webhookSecretSchema>;

export const WEBHOOK_DELIVERY_STATES = ["pending", "delivered", "failed"] as const;

/** One message to one endpoint: its tries so far and how the last one went. */
export const webhookDeliverySchema = z.object({
  /** The `webhook-id` header: the same on every try, so a receiver drops repeats. */
  id: z.string(),
  type: z.enum(WEBHOOK_EVENTS),
  state: z.enum(WEBHOOK_DELIVERY_STATES),
  attempts: z.number().int(),
  /** The HTTP status of the last try (null: none yet, or it got no answer). */
  lastStatus: z.number().int().nullable(),
  /** Why the last try failed (`status 500`, `timeout`, `redirect`, …), null once delivered. */
  lastError: z.string().nullable(),
  createdAt: z.number().int(),
  lastAttemptAt: z.number().int().nullable(),
  /** When the next try is due (pending only). */
  nextAt: z.number().int().nullable(),
  deliveredAt: z.number().int().nullable(),
});
export type WebhookDelivery = z.infer<typeof webhookDeliverySchema>;

export const webhookSchema = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.enum(WEBHOOK_EVENTS)),
  createdAt: z.number().int(),
  /** When the secret was last made (at creation or a rotation). */
  secretAt: z.number().int(),
  /** The newest deliveries first, at most `WEBHOOK_DELIVERIES_KEPT`. */
  deliveries: z.array(webhookDeliverySchema),
});
export type Webhook = z.infer<typeof webhookSchema>;

/** `GET /v1/webhooks`: the team's endpoints, never their secrets. */
export const webhookListSchema = z.object({ webhooks: z.array(webhookSchema) });

/** `DELETE /v1/webhooks/:id`. */
export const webhookDeletedSchema = z.object({ id: z.string(), deleted: z.literal(true) });

/**
 * What every delivery's body is (Standard Webhooks): the event's `type`, its time (ISO 8601) and
 * `data`, the audit entry that recorded it, with its place in the chain (`seq`, `prevHash`, `hash`).
 */
export const webhookPayloadSchema = z.object({
  type: z.enum(WEBHOOK_EVENTS),
  timestamp: z.string(),
  data: z.object({
    seq: z.number().int(),
    eventId: z.string(),
    at: z.number().int(),
    actor: z.string(),
    action: z.string(),
    subject: z.string().nullable(),
    detail: z.unknown(),
    prevHash: z.string(),
    hash: z.string(),
  }),
});
export type WebhookPayload = z.infer<typeof webhookPayloadSchema>;
