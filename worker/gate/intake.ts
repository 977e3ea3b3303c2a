/**
 * A new request's intake, before it is held: the session's own checks (its session id, a stop,
 * `_meta.tapgate`, an elicitation's size, the pending cap) and the approval it would be held as.
 * Pure over the gate's store: nothing is written here.
 *
 * Owns: `Refusal` (every way a request is refused) and the checks. Does not own: the team's
 * quotas (admission.ts) or holding the request (state-machine.ts `open`).
 */
import { type Approval, type SessionStop, stoppedSentence } from "../../sdk/src/approval";
import { type AgentAsk, isElicitation } from "../../sdk/src/elicitation-protocol";
import type { QuotaLimit } from "../../sdk/src/human/policy";
import { LIMITS, tapgateMetaSchema } from "../../sdk/src/protocol";
import { elicitationRefusal, newElicitationApproval } from "./elicitation";
import { newApproval, requestLifetimeMs } from "./rules";
import {
  isPrivateTeam,
  newSealedApproval,
  newSealedElicitation,
  PRIVATE_REQUIRED,
  PRIVATE_REQUIRED_MESSAGE,
  sealedRefusal,
} from "./sealed";
import type { GateStore, Holder, ServedSession } from "./store";

export type Refusal =
  /** `reason: "private_required"`: an unsealed request in a team whose policy says `privacy: "private"` (sealed.ts). */
  | {
      refused: "invalid_params" | "too_many_pending";
      message: string;
      issues?: unknown[];
      reason?: typeof PRIVATE_REQUIRED;
    }
  /** Over one of the team's quotas (the hub's verdict, admission.ts). */
  | { refused: "quota"; message: string; limit: QuotaLimit; retryAfterMs: number }
  /** The team's quotas could not be checked in time: refused, never held unchecked. */
  | { refused: "quota_unavailable"; message: string; retryAfterMs: number }
  /** The socket that sent it closed while it was being admitted: nobody to answer. */
  | { refused: "holder_gone"; message: string }
  /** Its key was revoked while it was being admitted. */
  | { refused: "key_revoked"; message: string }
  /** Storage failed while holding it: nothing was held. */
  | { refused: "not_held"; message: string }
  /** Someone stopped the session (session-stop.ts): every new request is refused until it is resumed. */
  | { refused: "session_stopped"; message: string; stopped: SessionStop };

/** The session's own checks of a new request (before the team's quotas): its lifetime, or a refusal. */
export function checkAsk(store: GateStore, meta: ServedSession, params: AgentAsk): { lifetimeMs: number } | Refusal {
  if (params.sessionId !== meta.sessionId) {
    return { refused: "invalid_params", message: `sessionId is not this session's (${meta.sessionId})` };
  }
  // Before anything else reads the request: in a private team an unsealed one is content in clear.
  if (isPrivateTeam(meta.policy) && tapgateOf(params)?.sealed === undefined) {
    return { refused: "invalid_params", message: PRIVATE_REQUIRED_MESSAGE, reason: PRIVATE_REQUIRED };
  }
  const stopped = store.stopped();
  if (stopped) return { refused: "session_stopped", message: stoppedSentence(stopped), stopped };
  const ask = tapgateMetaSchema.safeParse(params._meta?.tapgate ?? {});
  if (!ask.success) {
    const issues = ask.error.issues.map((i) => ({ ...i, path: ["_meta", "tapgate", ...i.path] }));
    return { refused: "invalid_params", message: "invalid _meta.tapgate", issues };
  }
  const sealedProblem = ask.data.sealed && sealedRefusal(meta.policy, params, ask.data.sealed);
  if (sealedProblem) return { refused: "invalid_params", message: sealedProblem };
  const tooLarge = !ask.data.sealed && isElicitation(params) ? elicitationRefusal(meta, params) : null;
  if (tooLarge) return { refused: "invalid_params", message: tooLarge };
  if (store.pendingCount() >= LIMITS.pendingPerSession) {
    const message = `this session already has ${LIMITS.pendingPerSession} pending requests`;
    return { refused: "too_many_pending", message };
  }
  return { lifetimeMs: requestLifetimeMs(meta.policy, ask.data.timeoutMs) };
}

/** The approval a request is held as, built from the session and its holder's socket as they are now. */
export function draftApproval(
  store: GateStore,
  d: { meta: ServedSession; holder: Holder; params: AgentAsk; now: number; id: string; lifetimeMs: number },
): Approval {
  const { meta, holder, params, now, id, lifetimeMs } = d;
  const asked = { id, meta, lifetimeMs, now };
  const sealed = sealedOf(params);
  if (sealed) {
    return isElicitation(params)
      ? newSealedElicitation({ ...asked, sealed })
      : newSealedApproval({ ...asked, params, sealed });
  }
  // Only what this holder's own socket told about the tool call (HTTP holders have none).
  if (isElicitation(params)) {
    const knownToolCall = params.toolCallId ? store.toolCall(holder.socketId, params.toolCallId) : {};
    return newElicitationApproval({ ...asked, params, knownToolCall });
  }
  return newApproval({ ...asked, params, knownToolCall: store.toolCall(holder.socketId, params.toolCall.toolCallId) });
}

const tapgateOf = (params: AgentAsk) => {
  const tapgate = params._meta?.tapgate;
  return typeof tapgate === "object" && tapgate !== null ? (tapgate as Record<string, unknown>) : undefined;
};

/** The request's sealed envelope, when it carries a well-formed one (checkAsk refuses a malformed one). */
function sealedOf(params: AgentAsk) {
  const sealed = tapgateOf(params)?.sealed;
  return sealed === undefined ? undefined : tapgateMetaSchema.shape.sealed.safeParse(sealed).data;
}
