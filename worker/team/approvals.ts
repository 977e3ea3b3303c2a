/**
 * Approvals as the human side sees them: reading one (its gate if it still holds it, else the
 * D1 record, with its pushes and escalation timeline from the hub), deciding one, and claiming
 * one ("Ada is looking", held by the hub). Also the agent side's way to the gate an approval id names.
 *
 * Owns: the one "no such approval" answer (unknown ids, another team's and another user's all
 * get it) and the words for a refused decision. Does not own: the decision itself (the gate's
 * state machine), who may decide (the gate checks role and policy), the SQL (`db/approvals.ts`).
 */
import type { AuthenticationResponseJSON } from "@simplewebauthn/server";
import type { Approval, ApprovalDetail, Owner } from "../../sdk/src/approval";
import type { Claim } from "../../sdk/src/human/approvals";
import { getApprovalOwner, getApprovalRecord, listMembers } from "../db";
import { orFallback, REQUEST_BUDGET_MS, withDeadline } from "../deadline";
import { DomainError } from "../errors";
import { approvalAtGate, type DecisionInput, type DecisionResult, gateFor } from "../gate/api";
import { lateDecisionError } from "../gate/rules";
import { type ClaimResult, hubFor } from "../hub/api";
import { DECIDER_ROLES } from "../roles";
import type { Env } from "../types";
import { assertRoomForRule, createCardRule } from "./rules";
import { type RelyingParty, repeatedStepUp, verifyStepUp } from "./step-up";

export const noSuchApproval = () => new DomainError("not_found", "no such approval");

/** The SessionGate an approval id names (404 for ids that cannot be ours). */
export function approvalGate(env: Env, approvalId: string) {
  const gate = gateFor(env, approvalId);
  if (!gate) throw noSuchApproval();
  return gate;
}

/** The gate did not answer in time: read D1's copy instead. */
const GATE_LATE = Symbol("gate late");

/**
 * One approval of the team, with whose session asked and where its pushes went. A hub that does
 * not answer within REQUEST_BUDGET_MS costs only the pushes and the timeline: the answer comes
 * without them, marked `detailUnavailable`. A gate that does not answer in time costs its own
 * record: D1's copy is answered (it may lag the gate by one flush), marked likewise.
 */
export async function readApproval(env: Env, teamId: string, approvalId: string): Promise<ApprovalDetail> {
  const gate = approvalGate(env, approvalId);
  const hub = hubFor(env, teamId);
  const [held, fromHub] = await Promise.all([
    orFallback<Approval | null | typeof GATE_LATE>(
      gate.getApproval(teamId, approvalId),
      REQUEST_BUDGET_MS,
      "gate.getApproval",
      GATE_LATE,
    ),
    // The pushes and the timeline are the hub's; the approval itself is the gate's (or D1's).
    orFallback(
      Promise.all([hub.deliveries(approvalId), hub.timeline(approvalId)]),
      REQUEST_BUDGET_MS,
      "hub.deliveries",
      null,
    ),
  ]);
  const fromGate = held === GATE_LATE ? null : held;
  const approval = fromGate ?? (await getApprovalRecord(env.DB, teamId, approvalId));
  const owner = approval && (await getApprovalOwner(env.DB, teamId, approval));
  if (!approval || !owner) throw noSuchApproval();
  if (!fromHub || held === GATE_LATE) return { ...approval, owner, delivery: [], detailUnavailable: true };
  const [delivery, escalations] = fromHub;
  return { ...approval, owner, delivery, escalations };
}

/** A decision as a route takes it: with the passkey assertion as sent, not yet verified. */
export type DecisionRequest = Omit<DecisionInput, "stepUp"> & {
  stepUp?: { assertion: AuthenticationResponseJSON; relyingParty: RelyingParty };
};

/**
 * A human's decision: the approval as decided, or why not (with the approval where that helps).
 * With `rule`, the allow also makes a standing `me` rule (`createdRule`), the gate having
 * checked that one may be made from this request; a full team is refused before deciding.
 * A step-up sent with it is verified first (any failure refuses the decision), and the team's
 * deciders are read with it (a quorum counts only their allows); whether one was needed is the
 * gate's to say (`403 step_up_required`), so every path to a decision is covered.
 */
export async function decideApproval(env: Env, request: DecisionRequest) {
  const { stepUp, ...rest } = request;
  // A rule allows what was asked again and again; an edited allow allowed something else, once.
  if (rest.rule && rest.updatedInput !== undefined) throw new DomainError("rule_from_edit");
  if (rest.rule) await assertRoomForRule(env, { teamId: rest.teamId, userId: rest.userId, role: rest.role });
  const { optionId } = rest;
  // An elicitation's answer is never an allow of a high-risk tool call: it has no step-up.
  if (stepUp && optionId === undefined) throw new DomainError("step_up_not_needed");
  let d: DecisionInput = rest;
  if (stepUp && optionId !== undefined) {
    const stepped = await verifiedOrRepeat(env, { ...rest, optionId }, stepUp);
    if ("repeat" in stepped) return stepped.repeat;
    d = { ...stepped.decision, deciders: await decidersNow(env, rest.teamId) };
  }
  // RPC stub types reject `unknown` JSON fields as unserialisable; the values are plain JSON.
  const result = (await approvalGate(env, d.approvalId).decide(d)) as unknown as DecisionResult;
  if (result.ok) {
    if (!d.rule || !result.ruleMatch) return result.approval;
    const who = { teamId: d.teamId, userId: d.userId, role: d.role };
    const rule = { match: result.ruleMatch, expiresInMs: d.rule.expiresInMs };
    return { ...result.approval, createdRule: await createCardRule(env, who, result.approval, rule) };
  }
  switch (result.error) {
    case "rule_not_possible":
    case "rule_choice_not_offered":
    case "edit_not_supported":
    case "edit_needs_allow":
    case "private_not_editable":
      throw new DomainError(result.error, result.message);
    case "invalid_request":
      throw new DomainError(result.error, result.message, {
        extra: { issues: [{ code: "custom", path: ["updatedInput"], message: result.message }] },
      });
    case "not_found":
      throw noSuchApproval();
    case "option_not_offered":
      throw new DomainError(
        result.error,
        d.optionId === undefined
          ? "answer this request with one of its options (optionId), or an elicitation with action"
          : `option ${JSON.stringify(d.optionId)} was not offered`,
      );
    case "invalid_content":
      throw new DomainError(result.error, result.message, {
        extra: {
          field: result.field,
          issues: [{ code: "custom", path: ["content", result.field], message: result.message }],
        },
      });
    case "request_truncated":
    case "not_session_owner":
    case "role_may_not_decide":
    case "step_up_required":
    case "step_up_wrong_request":
      throw new DomainError(result.error); // the table's words
    case "second_approver_required":
      throw new DomainError(result.error, undefined, { extra: { approval: result.approval } });
    case "request_changed":
      throw new DomainError(result.error, undefined, { extra: { approval: result.approval } });
    case "already_decided":
      throw new DomainError(result.error, "someone already decided this request", {
        extra: { approval: result.approval },
      });
    case "already_resolved":
      throw new DomainError(result.error, `resolved without a human: ${result.approval.reason}`, {
        extra: { approval: result.approval },
      });
  }
}

/** The members who hold a deciding role now, as D1 has them: a quorum counts only their allows. */
async function decidersNow(env: Env, teamId: string): Promise<string[]> {
  const members = await listMembers(env.DB, teamId);
  return members.filter((m) => DECIDER_ROLES.includes(m.role)).map((m) => m.userId);
}

/**
 * The decision with its step-up verified; or, for an allow retried after its 200 was lost (it
 * carries the assertion whose challenge the first try spent), the stored result.
 */
async function verifiedOrRepeat(
  env: Env,
  d: DecisionInput & { optionId: string },
  stepUp: NonNullable<DecisionRequest["stepUp"]>,
): Promise<{ decision: DecisionInput } | { repeat: Approval }> {
  try {
    return { decision: { ...d, stepUp: await verifyStepUp(env, stepUp.relyingParty, d, stepUp.assertion) } };
  } catch (error) {
    const repeat =
      error instanceof DomainError && error.code === "step_up_replayed"
        ? await repeatedStepUp(env, d, stepUp.assertion)
        : null;
    if (repeat) return { repeat };
    throw error;
  }
}

/**
 * "Ada is looking": a decider opened a pending request. Shown to teammates through the hub's live
 * feed; not a lock (anyone may still decide). An ended request is refused as a decision would be.
 */
export async function claimApproval(env: Env, teamId: string, approvalId: string, by: Owner): Promise<Claim> {
  const approval = await approvalAtGate(approvalGate(env, approvalId), teamId, approvalId);
  if (!approval) throw noSuchApproval();
  // RPC stub types reject `unknown` JSON fields as unserialisable; the values are plain JSON.
  const result =
    approval.state === "pending"
      ? ((await withDeadline(
          hubFor(env, teamId).claim(teamId, approval, by),
          REQUEST_BUDGET_MS,
          "hub.claim",
        )) as unknown as ClaimResult)
      : { approval };
  if ("claim" in result) return result.claim;
  const ended = result.approval;
  throw new DomainError(lateDecisionError(ended), "this request has already ended", { extra: { approval: ended } });
}
