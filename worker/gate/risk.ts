/**
 * Risk tiers as pure rules (docs/state-machine.md "Risk tiers"): whether a new request is
 * high-risk under the session's copy of the team policy (no D1 on the agent's path), the quorum
 * it opens with, and what an allow of a high-risk request needs: a step-up verified for this
 * person, this approval, this `requestHash` and this option, and under a quorum a person who has
 * not allowed it yet; short of the quorum, the allow is recorded and the request stays pending. An
 * earlier allow whose maker no longer holds a deciding role no longer counts.
 *
 * Owns: these rules, no state, no I/O. Does not own: verifying the passkey assertion (the
 * Worker, `worker/team/step-up.ts`), the patterns or their matching (`sdk/src/risk-match.ts`),
 * storage and transitions (store.ts, state-machine.ts).
 */
import type { Approval, ApprovalSnapshot, DecidedBy, Quorum, Risk } from "../../sdk/src/approval";
import { requestFacts } from "../../sdk/src/request-match";
import { isHighRisk } from "../../sdk/src/risk-match";
import { highRiskOf, type TeamPolicy } from "../policy";
import type { DecisionInput } from "./api";

/** The tier of a request, from its whole snapshot (before what is stored of it is cut). */
export function riskOf(policy: TeamPolicy, snapshot: ApprovalSnapshot): Risk {
  return isHighRisk(highRiskOf(policy).patterns, requestFacts(snapshot)) ? "high" : "normal";
}

/** The quorum a high-risk request opens with, fixed like its options and lifetime. */
export function openingQuorum(policy: TeamPolicy, risk: Risk): Quorum | undefined {
  const required = highRiskOf(policy).quorum;
  return risk === "high" && required > 1 ? { required, allowedBy: [] } : undefined;
}

export type HighRiskAllow =
  /** Not high-risk, or this allow completes the quorum: resolve (with the quorum as completed). */
  | { ok: true; complete: true; quorum?: Quorum }
  /** Recorded, still pending: the quorum needs more people. */
  | { ok: true; complete: false; quorum: Quorum }
  | { ok: false; error: "step_up_required" | "step_up_wrong_request" | "second_approver_required" };

/**
 * What an allow of `pending` by this decision needs and does. `editedInputHash`: the allow
 * carries edited input (edit.ts; `pending.risk` is then the edit's tier), and its step-up must
 * have been issued for that very edit; one for the request as asked does not cover it.
 */
export function highRiskAllow(
  pending: Approval,
  d: DecisionInput,
  decidedBy: DecidedBy,
  now: number,
  editedInputHash?: string,
): HighRiskAllow {
  if (pending.risk !== "high") return { ok: true, complete: true };
  const stepUp = d.stepUp;
  if (!stepUp) return { ok: false, error: "step_up_required" };
  const bound =
    stepUp.approvalId === pending.id &&
    stepUp.requestHash === pending.requestHash &&
    stepUp.userId === d.userId &&
    stepUp.optionId === d.optionId &&
    stepUp.editedInputHash === editedInputHash;
  if (!bound) return { ok: false, error: "step_up_wrong_request" };
  if (!pending.quorum) return { ok: true, complete: true };
  const standing = standingAllows(pending.quorum, d.deciders);
  if (standing.some((p) => p.userId === d.userId)) return { ok: false, error: "second_approver_required" };
  const quorum = { ...pending.quorum, allowedBy: [...standing, { ...decidedBy, at: now }] };
  return quorum.allowedBy.length >= quorum.required
    ? { ok: true, complete: true, quorum }
    : { ok: true, complete: false, quorum };
}

/** The quorum's allows that still count: those whose makers still decide (all, when that is not known). */
function standingAllows(quorum: Quorum, deciders: string[] | undefined): Quorum["allowedBy"] {
  return deciders ? quorum.allowedBy.filter((p) => deciders.includes(p.userId)) : quorum.allowedBy;
}
