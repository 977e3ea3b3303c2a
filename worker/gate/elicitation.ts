/**
 * The SessionGate's rules for elicitations (ACP `elicitation/create`), as pure functions: what a
 * new one looks like, whether a human's answer may be taken (and what it resolves to), what the
 * agent is answered, and which requests an `elicitation/complete` closes.
 *
 * An elicitation lives through the same state machine as a permission request (same lifetime,
 * routing, exactly-once claim); only its record, its decision and its answer differ. Every end
 * that is not a human's answer answers `{action: "cancel"}` (fail closed).
 *
 * Owns: those rules, no state, no I/O. Does not own: the permission rules (rules.ts), the
 * transitions (state-machine.ts) or the content check itself (`sdk/src/elicitation-form.ts`).
 */
import type { Approval, DecidedBy, ResolutionReason } from "../../sdk/src/approval";
import { checkContent } from "../../sdk/src/elicitation-form";
import {
  type CreateElicitationParams,
  type CreateElicitationResponse,
  ELICITATION_CANCELLED,
  type ElicitationAction,
  type ElicitationContent,
  elicitationContentSchema,
} from "../../sdk/src/elicitation-protocol";
import { canonicalJson, sha256Hex } from "../crypto";
import { limitsOf } from "../policy";
import type { DecisionInput } from "./api";
import { decidedByOf, mayDecide, type Resolution, withoutNullish } from "./rules";
import type { ServedSession } from "./store";
import { jsonBytes } from "./stored-snapshot";

/** The question as the card shows it; hashed into `requestHash` whole (the schema, the URL). */
function elicitationSnapshot(meta: ServedSession, params: CreateElicitationParams, knownToolCall: object) {
  const elicitation =
    params.mode === "form"
      ? { mode: params.mode, message: params.message, requestedSchema: params.requestedSchema }
      : { mode: params.mode, message: params.message, url: params.url, elicitationId: params.elicitationId };
  return {
    // Tool-call-scoped: what `session/update` told about that tool call; session-scoped: no tool call.
    toolCall: { ...knownToolCall, toolCallId: params.toolCallId ?? "" },
    session: meta.info,
    ...(params._meta ? { meta: params._meta } : {}),
    elicitation,
  };
}

/**
 * Why a new elicitation is refused before it is held, or null. A form or URL cut to fit the
 * team's stored-bytes limit could not be answered faithfully, so one that does not fit is refused
 * rather than cut.
 */
export function elicitationRefusal(meta: ServedSession, params: CreateElicitationParams): string | null {
  const bytes = jsonBytes(elicitationSnapshot(meta, params, {}));
  const cap = limitsOf(meta.policy).storedBytesPerRequest;
  return bytes > cap ? `the elicitation is ${bytes} bytes, over the team's storedBytesPerRequest (${cap})` : null;
}

export function newElicitationApproval(a: {
  id: string;
  meta: ServedSession;
  params: CreateElicitationParams;
  knownToolCall: Record<string, unknown>;
  lifetimeMs: number;
  now: number;
}): Approval {
  const snapshot = elicitationSnapshot(a.meta, a.params, withoutNullish(a.knownToolCall));
  return {
    id: a.id,
    sessionId: a.meta.sessionId,
    type: "elicitation",
    state: "pending",
    reason: null,
    snapshot,
    options: [],
    requestHash: sha256Hex(canonicalJson(snapshot)),
    createdAt: a.now,
    expiresAt: a.now + a.lifetimeMs,
    resolvedAt: null,
    optionId: null,
    decidedBy: null,
    action: null,
  };
}

export type ElicitationCheck =
  | { ok: true; resolution: Resolution }
  | { ok: false; error: "role_may_not_decide" | "not_session_owner" | "option_not_offered" | "request_changed" }
  | { ok: false; error: "invalid_content"; field: string; message: string };

/**
 * Whether a human may give this answer: an `action` (not an `optionId`), content only with
 * `accept` of a form and fitting its schema, and the `requestHash` shown. `accept` resolves
 * `allowed`, `decline` and `cancel` resolve `denied`; the action and content reach the agent.
 */
export function checkElicitationDecision(meta: ServedSession, pending: Approval, d: DecisionInput): ElicitationCheck {
  const refused = mayDecide(meta, d);
  if (refused) return { ok: false, error: refused };
  const asked = pending.snapshot.elicitation;
  if (!d.action || !asked) return { ok: false, error: "option_not_offered" };
  let content: ElicitationContent | undefined;
  if (pending.sealed && d.action === "accept") {
    // A sealed question's form is in the ciphertext: the device checked the answer, the agent checks it again.
    const flat = elicitationContentSchema.safeParse(d.content ?? {});
    if (!flat.success)
      return { ok: false, error: "invalid_content", field: "content", message: "values are text, numbers or booleans" };
    content = d.content === undefined ? undefined : flat.data;
  } else if (d.action === "accept" && asked.mode === "form" && asked.requestedSchema) {
    const checked = checkContent(asked.requestedSchema, d.content ?? {});
    if (!checked.ok) return { ok: false, error: "invalid_content", field: checked.field, message: checked.message };
    content = checked.content;
  } else if (d.content !== undefined) {
    const message = asked.mode === "url" ? "a URL elicitation takes no content" : "content goes only with accept";
    return { ok: false, error: "invalid_content", field: "content", message };
  }
  if (d.requestHash !== pending.requestHash) return { ok: false, error: "request_changed" };
  const decidedBy = decidedByOf(d);
  const state = d.action === "accept" ? "allowed" : "denied";
  return { ok: true, resolution: { state, reason: "decided", action: d.action, content, decidedBy } };
}

/**
 * The `elicitation/create` result: the human's action (and an accepted form's content), else the
 * fail-closed `cancel`; `_meta.tapgate` as on permission answers.
 */
export function elicitationAnswer(
  approvalId: string,
  r: {
    reason: ResolutionReason | null;
    action?: ElicitationAction | null;
    content?: ElicitationContent;
    decidedBy?: DecidedBy | null;
    message?: string;
  },
): CreateElicitationResponse {
  const answer =
    r.reason === "decided" && r.action
      ? { action: r.action, ...(r.content && { content: r.content }) }
      : ELICITATION_CANCELLED;
  const decidedBy = r.decidedBy ? { name: r.decidedBy.name, device: r.decidedBy.device } : undefined;
  const message = r.message !== undefined ? { message: r.message } : undefined;
  return {
    ...answer,
    _meta: { tapgate: { approvalId, reason: r.reason, ...(decidedBy && { decidedBy }), ...message } },
  };
}

/** Whether an answer repeats the one that ended the elicitation: same person, action, content and hash. */
export function isRepeatElicitation(current: Approval, answered: string | null, d: DecisionInput): boolean {
  if (current.reason !== "decided" || current.decidedBy?.userId !== d.userId) return false;
  if (current.action !== d.action || current.requestHash !== d.requestHash) return false;
  const given = answered ? (JSON.parse(answered) as CreateElicitationResponse).content : undefined;
  return canonicalJson(given ?? null) === canonicalJson(d.content ?? null);
}

/** Whether a stored record is an elicitation `elicitation/complete {elicitationId}` names. */
export function completes(record: Approval, elicitationId: string): boolean {
  return record.type === "elicitation" && record.snapshot.elicitation?.elicitationId === elicitationId;
}
