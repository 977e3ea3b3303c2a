/** `GET /v1/live`: the team's live feed, one JSON event per WebSocket message (and "pong"). */
import { z } from "zod";
import { agentSessionSchema, approvalDetailSchema } from "../approval.js";

export const liveEventSchema = z.discriminatedUnion("type", [
  z.object({ type: z.enum(["approval", "resolved"]), approval: approvalDetailSchema }),
  z.object({ type: z.literal("session"), session: agentSessionSchema }),
]);
export type LiveEvent = z.infer<typeof liveEventSchema>;
export type LiveApproval = z.infer<typeof approvalDetailSchema>;
