/**
 * Approvals as the human side sees them: reading one (its gate if it still holds it, else the
 * D1 record, with its pushes from the hub) and deciding one. Also the agent side's way to the
 * gate an approval id names.
 *
 * Owns: the one "no such approval" answer (unknown ids, another team's and another user's all
 * get it) and the words for a refused decision. Does not own: the decision itself (the gate's
 * state machine), who may decide (the gate checks role and policy), the SQL (`db/approvals.ts`).
 */
import { getApprovalRecord } from "../db";
import { DomainError } from "../errors";
import { hubFor } from "../hub/api";
import { type DecisionInput, type DecisionResult, gateFor } from "../session-gate";
import type { Env } from "../types";

export const noSuchApproval = () => new DomainError("not_found", "no such approval");

/** The SessionGate an approval id names (404 for ids that cannot be ours). */
export function approvalGate(env: Env, approvalId: string) {
  const gate = gateFor(env, approvalId);
  if (!gate) throw noSuchApproval();
  return gate;
}

/** One approval of the team, with where its pushes went. */
export async function readApproval(env: Env, teamId: string, approvalId: string) {
  const gate = approvalGate(env, approvalId);
  const [held, delivery] = await Promise.all([
    gate.getApproval(teamId, approvalId),
    hubFor(env, teamId).deliveries(approvalId),
  ]);
  const approval = held ?? (await getApprovalRecord(env.DB, teamId, approvalId));
  if (!approval) throw noSuchApproval();
  return { ...approval, delivery };
}

/** A human's decision: the approval as decided, or why not (with the approval where that helps). */
export async function decideApproval(env: Env, d: DecisionInput) {
  // RPC stub types reject `unknown` JSON fields as unserialisable; the values are plain JSON.
  const result = (await approvalGate(env, d.approvalId).decide(d)) as unknown as DecisionResult;
  if (result.status === 404) throw noSuchApproval();
  if (result.status === 400) {
    throw new DomainError(result.error, `option ${JSON.stringify(d.optionId)} was not offered`);
  }
  if (result.status === 403) {
    const why =
      result.error === "not_session_owner"
        ? "team policy lets only the session's owner decide"
        : "your role may not decide";
    throw new DomainError(result.error, why);
  }
  const extra = { approval: result.approval };
  if ("error" in result) {
    throw new DomainError(result.error, "the request differs from what you saw; reload it", { extra });
  }
  if (result.status === 409)
    throw new DomainError("already_decided", "someone already decided this request", { extra });
  if (result.status === 410) {
    throw new DomainError("already_resolved", `resolved without a human: ${result.approval.reason}`, { extra });
  }
  return result.approval;
}
