/** `/v1/sessions`: the team's agent sessions, and one session with its requests in order. */
import { z } from "zod";
import { agentSessionSchema, approvalSchema } from "../approval.js";
import { sessionIdSchema } from "../protocol.js";
import { cursorQuerySchema } from "./common.js";

export const sessionListQuerySchema = z.object({
  state: z.enum(["connected", "recent"]).default("recent"),
  limit: z.coerce.number().int().min(1).max(200).default(100),
});
/** A session whose outbox dead-lettered rows: how many, and when the count last grew. */
export const deadLetteredSessionSchema = z.object({
  sessionId: z.string(),
  deadLetters: z.number().int().positive(),
  at: z.number(),
});
export type DeadLetteredSession = z.infer<typeof deadLetteredSessionSchema>;
/** `GET /v1/sessions`: the sessions asked for, and every session of the team with dead letters. */
export const sessionListSchema = z.object({
  sessions: z.array(agentSessionSchema),
  deadLettered: z.array(deadLetteredSessionSchema),
});
export type SessionList = z.infer<typeof sessionListSchema>;
export const sessionParamSchema = z.object({ sessionId: sessionIdSchema });
export const sessionPageQuerySchema = z.object({
  cursor: cursorQuerySchema.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(200),
});
/** `GET /v1/sessions/:sessionId`: the session (it names the owner) and its requests, oldest first. */
export const sessionDetailSchema = agentSessionSchema.extend({
  approvals: z.array(approvalSchema),
  cursor: z.string().nullable(),
});
export type SessionDetail = z.infer<typeof sessionDetailSchema>;
/** `POST /v1/sessions/:sessionId/replay`: dead letters that landed on this replay, and how many are left. */
export const replayAnswerSchema = z.object({
  replayed: z.number().int().nonnegative(),
  deadLetters: z.number().int().nonnegative(),
});
export type ReplayAnswer = z.infer<typeof replayAnswerSchema>;
