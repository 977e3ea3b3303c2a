/**
 * A batch of human decisions (`POST /v1/approvals/decisions`): each item goes through the very
 * same single-decision use case, so every check a single decision passes (role, the team's
 * `deciders`, `requestHash`, exactly once, and whatever that use case checks besides) applies
 * to each item on its own. One item's refusal never stops the others.
 *
 * Owns: the order items run in (a repeated approval id runs after its earlier items, so the
 * first occurrence decides and the later ones answer as a repeated single decision would) and
 * turning each outcome into `{approvalId, status, error?, message?, approval?}`. Does not own:
 * the decision (`team/approvals.ts` and the gate), validating the body (the route's schema).
 */
import type { Approval } from "../../sdk/src/approval";
import { ERRORS } from "../../sdk/src/errors";
import type { DecisionBatchItem, DecisionBatchResult } from "../../sdk/src/human/approvals";
import { DomainError } from "../errors";

/** Decides one item exactly as `POST /v1/approvals/:id/decision` would: the approval, or a `DomainError`. */
export type DecideOne = (item: DecisionBatchItem) => Promise<Approval>;

/**
 * Every item's result, in the order sent. Different approvals are decided concurrently (each in
 * its own gate); the items naming one approval run one after another, in order.
 */
export async function decideBatch(items: DecisionBatchItem[], decideOne: DecideOne): Promise<DecisionBatchResult[]> {
  const results: DecisionBatchResult[] = new Array(items.length);
  const byApproval = new Map<string, number[]>();
  items.forEach((item, i) => {
    byApproval.set(item.approvalId, [...(byApproval.get(item.approvalId) ?? []), i]);
  });
  await Promise.all(
    [...byApproval.values()].map(async (indexes) => {
      for (const i of indexes) {
        const item = items[i] as DecisionBatchItem;
        results[i] = await resultOf(item.approvalId, () => decideOne(item));
      }
    }),
  );
  return results;
}

async function resultOf(approvalId: string, decide: () => Promise<Approval>): Promise<DecisionBatchResult> {
  try {
    return { approvalId, status: 200, approval: await decide() };
  } catch (err) {
    if (!(err instanceof DomainError)) {
      console.error("batch decision failed", err instanceof Error ? err.name : "unknown");
      return { approvalId, status: 500, error: "internal_error", message: ERRORS.internal_error.message };
    }
    const approval = (err.extra as { approval?: Approval } | undefined)?.approval;
    return {
      approvalId,
      status: ERRORS[err.code].status,
      error: err.code,
      message: err.message || ERRORS[err.code].message,
      ...(approval && { approval }),
    };
  }
}
