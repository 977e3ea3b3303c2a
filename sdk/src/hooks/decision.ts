/**
 * What every agent hook shares once Tapgate answered: the hook's decision (allow, or a deny with
 * a reason the agent shows) from the ACP answer, and why Tapgate said no. Environment-neutral:
 * the `tapgate *-hook` commands (Node) and the Worker's HTTP hook endpoint both use it.
 *
 * Does not own: turning an agent's payload into a permission request (each agent's `hook.ts`),
 * asking (the SDK's gate session, or the gate itself), or the agent's output shape.
 */
import { stoppedSentence } from "../approval.js";
import type { RequestPermissionResponse, TapgateAnswerMeta } from "../protocol.js";
import { tapgateAnswerMeta } from "../protocol.js";

export interface HookDecision {
  allow: boolean;
  /** Shown to the agent on a deny, to the user on an allow. */
  reason: string;
  /** An allow with input a human edited: the whole tool input to run instead (Claude's `updatedInput`). */
  updatedInput?: Record<string, unknown>;
  /** The option a human chose, when the answer was their decision (Codex's `deny_stop` reads it). */
  chosen?: string;
}

/** The two options every hook offers: the card shows "Allow once" and "Deny". */
export const HOOK_OPTIONS = [
  { optionId: "allow", name: "Allow once", kind: "allow_once" },
  { optionId: "deny", name: "Deny", kind: "reject_once" },
] as const;

export const deny = (reason: string): HookDecision => ({ allow: false, reason });

export const ALLOWED: HookDecision = { allow: true, reason: "allowed on Tapgate" };

const by = (d: { name: string; device: string }) => `${d.name} (${d.device})`;

/** The decider's words to the agent, when the decision carried some (`_meta.tapgate.message`). */
function humanReason(meta: TapgateAnswerMeta): string | undefined {
  return meta.message?.trim() || undefined;
}

/** Why Tapgate said no, from the answer's `_meta.tapgate` (`waitedMs`: how long the hook waited). */
export function denyReason(meta: TapgateAnswerMeta, waitedMs: number): string {
  switch (meta.reason) {
    case "decided": {
      const who = meta.decidedBy
        ? `denied on Tapgate by ${by(meta.decidedBy)}`
        : "denied on Tapgate by a human reviewer";
      const why = humanReason(meta);
      return why ? `${who}: ${why}` : who;
    }
    case "expired":
      return `Tapgate: expired — no decision within ${Math.round(waitedMs / 1000)} s`;
    case "agent_disconnected":
      return "Tapgate: agent disconnected before anyone decided";
    case "agent_cancelled":
    case "session_cancelled":
      return "Tapgate: the request was cancelled";
    case "dismissed": {
      const who = `dismissed on Tapgate by ${meta.decidedBy ? by(meta.decidedBy) : "a human reviewer"}, not allowed`;
      const why = humanReason(meta);
      return why ? `${who}: ${why}` : who;
    }
    case "key_revoked":
      return "Tapgate: this API key was revoked — run `tapgate login`";
    case "session_stopped":
      return `Tapgate: ${stoppedSentence({ by: meta.decidedBy ?? { name: "a human reviewer" }, reason: humanReason(meta) })}`;
    case "service_restart":
      return "Tapgate: the service restarted before anyone decided; try again";
    case "invalid":
      return "Tapgate: the service could not show this request";
    default:
      return `Tapgate: denied (${meta.reason ?? "no reason given"})`;
  }
}

export interface AnswerContext {
  /** Milliseconds the hook waited for the answer. */
  waitedMs: number;
  /** The hook's own limit, in milliseconds. */
  timeoutMs: number;
  /** The last problem the SDK reported while asking (it answers local failures fail-closed). */
  problem?: string;
  /** The request said the agent takes edited input (`_meta.tapgate.acceptsEdits`); else an edited allow is a deny. */
  acceptsEdits?: boolean;
}

/** Whether a request said its agent takes edited input: the `acceptsEdits` a hook passes to `decisionFrom`. */
export function requestAcceptsEdits(request: { _meta?: Record<string, unknown> | null | undefined }): boolean {
  const tapgate = request._meta?.tapgate;
  return (
    typeof tapgate === "object" && tapgate !== null && (tapgate as { acceptsEdits?: unknown }).acceptsEdits === true
  );
}

/**
 * What one ask came to: Tapgate's answer with how long it took, or, when nothing could be
 * decided (no key, unreachable, refused, withdrawn), why, already worded for the agent.
 */
export type Asked = ({ answer: RequestPermissionResponse } & AnswerContext) | { failed: string };

/**
 * An ask's decision: a failure is a deny with its reason; an answer is read by `decisionFrom`
 * (`acceptsEdits`: the request said its agent takes edited input).
 */
export const decisionOf = (asked: Asked, acceptsEdits = false): HookDecision =>
  "failed" in asked ? deny(asked.failed) : decisionFrom(asked.answer, { ...asked, acceptsEdits });

/**
 * The hook's decision from Tapgate's answer: only the offered allow option is an allow; every
 * other answer — a reject, `cancelled`, an unknown outcome, an option never offered — is a deny.
 */
export function decisionFrom(answer: RequestPermissionResponse, ctx: AnswerContext): HookDecision {
  const { outcome } = answer;
  const meta = tapgateAnswerMeta(answer);
  if (outcome.outcome === "selected" && outcome.optionId === HOOK_OPTIONS[0].optionId) {
    const updatedInput = meta?.updatedInput;
    if (!updatedInput) return ALLOWED;
    // Allowing the input as asked would run what nobody allowed: an edit this agent cannot take is a deny.
    if (!ctx.acceptsEdits) return deny("Tapgate: allowed with edited input, which this agent cannot take");
    return { ...ALLOWED, reason: "allowed on Tapgate with edited input", updatedInput };
  }
  // The service says why it ended; answers the SDK gave itself carry no `_meta`.
  if (meta) {
    const chosen = outcome.outcome === "selected" && meta.reason === "decided" ? outcome.optionId : undefined;
    return { ...deny(denyReason(meta, ctx.waitedMs)), ...(chosen !== undefined && { chosen }) };
  }
  if (outcome.outcome === "cancelled") return deny("Tapgate: the request was cancelled");
  if (ctx.problem) return deny(`Tapgate: ${ctx.problem}`);
  // Without `_meta` (an older service), expiry and a human's deny are the same answer; only the clock tells them apart.
  if (ctx.waitedMs >= ctx.timeoutMs) return deny(`Tapgate: no decision within ${ctx.timeoutMs / 1000} s`);
  return deny("denied on Tapgate by a human reviewer");
}
