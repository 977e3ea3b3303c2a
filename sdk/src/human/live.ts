/** `GET /v1/live`: the team's live feed, one JSON event per WebSocket message (and "pong"). */
import { z } from "zod";
import { agentSessionSchema, approvalDetailSchema } from "../approval.js";
import { claimSchema } from "./approvals.js";
import { quotaLimitSchema } from "./policy.js";

/** A request the team's quotas refused (`refused`): whose session, which limit, when to retry. */
export const quotaRefusalSchema = z.object({
  sessionId: z.string(),
  owner: z.object({ userId: z.string(), name: z.string() }),
  limit: quotaLimitSchema,
  retryAfterMs: z.number(),
  at: z.number(),
});
export type QuotaRefusal = z.infer<typeof quotaRefusalSchema>;

export const liveEventSchema = z.discriminatedUnion("type", [
  z.object({ type: z.enum(["approval", "resolved"]), approval: approvalDetailSchema }),
  z.object({ type: z.literal("session"), session: agentSessionSchema }),
  z.object({ type: z.literal("refused"), refusal: quotaRefusalSchema }),
  /** Someone opened a pending request ("Ada is looking"); shown until `until` or the request ends. */
  claimSchema.extend({ type: z.literal("claimed") }),
  /**
   * A request shown as it was admitted (`approval`) that was never held after all: its agent's
   * socket closed, or its key was revoked, in the moment between. It decides nothing; the card goes.
   */
  z.object({ type: z.literal("withdrawn"), approvalId: z.string() }),
]);
export type LiveEvent = z.infer<typeof liveEventSchema>;
export type LiveApproval = z.infer<typeof approvalDetailSchema>;

/**
 * What a page may send on its live socket (besides `ping`): whether it is visible
 * (`visibilitychange`), and which pending cards it showed while visible. A person with a visible
 * page gets cards there instead of pushes; a card shown counts as seen.
 */
export const liveClientMessageSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("visibility"), visible: z.boolean() }),
  z.object({ type: z.literal("seen"), approvalIds: z.array(z.string().max(200)).max(200) }),
]);
export type LiveClientMessage = z.infer<typeof liveClientMessageSchema>;
