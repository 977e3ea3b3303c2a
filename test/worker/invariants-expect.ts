/**
 * What the property test's model (invariants-model.ts) expects of a decision and of the agent's
 * answers: the modelled request, a human's choice, the status each decision must get, the body
 * that carries it, and the answer each end gives the agent. Pure: no Worker, no I/O.
 */
import type { Approval, ApprovalState, ResolutionReason } from "../../sdk/src/approval";
import type { AgentSocket } from "./helpers";
import type { ElicitationAction, Option } from "./invariants-actions";

/** What the agent receives, without `_meta`: a permission's `{outcome}`, an elicitation's `{action, content?}`. */
export type Answer = Record<string, unknown>;
/** A human's choice: an option of a permission request, or an elicitation's action. */
export type Choice = { optionId: Option } | { action: ElicitationAction };

export interface Modelled {
  approval: Pick<Approval, "id" | "requestHash">;
  type: "permission" | "elicitation";
  risk: "normal" | "high";
  /** How many different people must allow it (2 only for a high-risk request under a quorum). */
  quorum: number;
  /** The key that asked, and the model's tick when it asked. */
  keyId: string;
  askedAt: number;
  /** The socket that asked, or null for an HTTP-held request. */
  socket: AgentSocket | null;
  rpcId: number | null;
  state: ApprovalState;
  reason: ResolutionReason | null;
  /** What the agent must have received once resolved (null: its socket was gone, nobody heard). */
  answer: Answer | null;
  /** The first `200` of a decision: what every repeat of it must answer, and what the gate keeps. */
  decided: Approval | null;
  /** The first final body an HTTP poll got: every later poll must get the same. */
  finalBody: unknown;
  /** The tick of the `200` (or the rule) that allowed it. */
  allowedAt: number | null;
  /** Who allowed it with a step-up while short of its quorum (each an `approval.allow_recorded`). */
  partialAllows: string[];
}

export const selected = (optionId: string): Answer => ({ outcome: { outcome: "selected", optionId } });
/** The elicitation form every `elicit` asks, and what every `accept` of it sends. */
export const FORM = { type: "object", properties: { name: { type: "string", minLength: 1 } }, required: ["name"] };
export const FORM_CONTENT = { name: "tapgate" };
const ELICITATION_CANCEL: Answer = { action: "cancel" };
/** The fail-closed answer: `permissionParams`' first `reject_once`; an elicitation's `cancel`. */
export const failClosed = (item: Modelled): Answer =>
  item.type === "elicitation" ? ELICITATION_CANCEL : selected("deny");
export const cancelled = (item: Modelled): Answer =>
  item.type === "elicitation" ? ELICITATION_CANCEL : { outcome: { outcome: "cancelled" } };
export const pickFrom = <T>(list: T[], n: number): T | undefined => list[n % Math.max(1, list.length)];
export const allows = (choice: Choice) =>
  "optionId" in choice ? choice.optionId === "allow" : choice.action === "accept";

export const answerOf = (action: ElicitationAction): Answer =>
  action === "accept" ? { action, content: FORM_CONTENT } : { action };

/** A decision's body: the choice (an `accept` with the form's content) and the hash shown, or a stale one. */
export function decisionBody(item: Modelled, choice: Choice, staleHash = false) {
  const requestHash = staleHash ? "f".repeat(64) : item.approval.requestHash;
  const content = "action" in choice && choice.action === "accept" ? { content: FORM_CONTENT } : {};
  return { ...choice, ...content, requestHash };
}

/** The first decision's choice again, or the other one (allow ↔ deny, accept ↔ decline). */
export function repeatOf(first: Approval, same: boolean): Choice {
  if (first.type === "elicitation") {
    const action = first.action as ElicitationAction;
    return { action: same ? action : action === "accept" ? "decline" : "accept" };
  }
  const option = first.optionId as Option;
  return { optionId: same ? option : option === "allow" ? "deny" : "allow" };
}

/**
 * The status a decision must get (docs/state-machine.md, "A decision, step by step"): on a
 * decided request only its decider's same choice and hash is `200` again (idempotent), else
 * `409`; after an end without a human `410`; on a pending one `400` for a choice it does not
 * offer, `409` for a stale hash or a rule that cannot be made from it (a high-risk request, a
 * deny, someone else's session), `403` for a high-risk allow without a step-up, else `200`.
 */
export function expectedDecision(
  item: Modelled,
  userId: string,
  choice: Choice,
  o: { staleHash?: boolean; rule?: boolean; stepUp?: unknown; owner: string },
): number {
  if (item.state !== "pending") {
    if (item.reason !== "decided") return 410;
    const first = item.decided;
    const same = "optionId" in choice ? first?.optionId === choice.optionId : first?.action === choice.action;
    return !o.staleHash && first?.decidedBy?.userId === userId && same ? 200 : 409;
  }
  const offered =
    item.type === "elicitation"
      ? "action" in choice
      : "optionId" in choice && (choice.optionId === "allow" || choice.optionId === "deny");
  if (!offered) return 400;
  if (o.staleHash) return 409;
  if (o.rule && (!allows(choice) || item.risk === "high" || userId !== o.owner)) return 409;
  if (allows(choice) && item.risk === "high" && o.stepUp === undefined) return 403;
  return 200;
}
