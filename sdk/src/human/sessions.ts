/** `/v1/sessions`: the team's agent sessions, and one session with its requests in order. */
import { z } from "zod";
import { agentSessionSchema, approvalSchema, sessionStopSchema } from "../approval.js";
import { sessionIdSchema } from "../protocol.js";
import { DECISION_REASON_CHARS } from "./approvals.js";
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
/** `POST /v1/sessions/:sessionId/stop`: the stopper's words to the agent, if any (as long as a decision's). */
export const stopBodySchema = z.strictObject({
  reason: z.string().trim().min(1).max(DECISION_REASON_CHARS).optional(),
});
export type StopBody = z.infer<typeof stopBodySchema>;
/**
 * `POST /v1/sessions/:sessionId/stop` and `/resume`: the session's stop as it is now (null once
 * resumed) and how many pending requests this call denied (`session_stopped`).
 */
export const stopAnswerSchema = z.object({
  sessionId: z.string(),
  stopped: sessionStopSchema.nullable(),
  denied: z.number().int().nonnegative(),
});
export type StopAnswer = z.infer<typeof stopAnswerSchema>;
