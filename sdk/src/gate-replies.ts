/**
 * What the gate's replies to a session's requests mean, read apart from the requests in flight
 * (`gate-session.ts`): whether a permission answer picks an offered option, whether an
 * elicitation's answer fits its question, a refusal because the team is private, and the sentence
 * a stopped session's reply says. Pure.
 */
import { sessionStopSchema, stoppedSentence } from "./approval.js";
import { checkContent } from "./elicitation-form.js";
import type { CreateElicitationParams, CreateElicitationResponse } from "./elicitation-protocol.js";
import { isRecord } from "./jsonrpc.js";
import type { OptionRef } from "./params.js";
import { type RequestPermissionResponse, requestPermissionResponseSchema, tapgateAnswerMeta } from "./protocol.js";

/** The service's permission answer if it is well formed and picks one of the options offered; else undefined. */
export function offeredPermissionAnswer(result: unknown, options: OptionRef[]): RequestPermissionResponse | undefined {
  const parsed = requestPermissionResponseSchema.safeParse(result);
  if (!parsed.success) return undefined;
  const { outcome } = parsed.data;
  if (outcome.outcome === "cancelled") return parsed.data;
  return options.some((o) => o.optionId === outcome.optionId) ? parsed.data : undefined;
}

/** Content only with `accept` of a form, and then fitting its fields; none otherwise. */
export function answerFits(params: CreateElicitationParams, answer: CreateElicitationResponse): boolean {
  if (answer.content == null) return true;
  return (
    answer.action === "accept" && params.mode === "form" && checkContent(params.requestedSchema, answer.content).ok
  );
}

/** The gate refused an unsealed request because the team is private (`invalid_params`, `data.reason`). */
export function privateRequired(msg: Record<string, unknown>): boolean {
  return isRecord(msg.error) && isRecord(msg.error.data) && msg.error.data.reason === "private_required";
}

/**
 * What a stopped session's reply says: "denied, stopped by Ada: <reason>" for a request it ended,
 * "refused, stopped by Ada: <reason> (until someone resumes the session)" for one it would not
 * hold (`-32001`, `data.reason: "session_stopped"`); undefined for any other reply.
 */
export function stopNotice(msg: Record<string, unknown>): string | undefined {
  if (isRecord(msg.error)) {
    const data = isRecord(msg.error.data) ? msg.error.data : {};
    if (data.reason !== "session_stopped") return undefined;
    const stop = sessionStopSchema.safeParse(data.stopped);
    const sentence = stop.success ? stoppedSentence(stop.data) : "the session was stopped";
    return `refused, ${sentence} (until someone resumes the session)`;
  }
  const meta = isRecord(msg.result) ? tapgateAnswerMeta(msg.result) : undefined;
  if (meta?.reason !== "session_stopped") return undefined;
  return `denied, ${stoppedSentence({ by: meta.decidedBy ?? { name: "a teammate" }, reason: meta.message })}`;
}
