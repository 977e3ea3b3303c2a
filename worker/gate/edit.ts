/**
 * "Edit, then allow" as the gate's pure rules (docs/state-machine.md "Edited input"): whether a
 * decision's `updatedInput` may be taken for this request, and what the edit is: its hash and
 * the risk tier of the request as edited. An edit is classified again, under the session's copy
 * of the team policy: an edit that makes the request high-risk needs the step-up, bound to the
 * edit's hash (risk.ts).
 *
 * Owns: these checks, no state, no I/O. Does not own: the shape rule (`sdk/src/edit-input.ts`,
 * shared with the card), the option and hash checks before it (rules.ts `checkDecision`), what
 * an allow of a high-risk request needs (risk.ts), or refusing a rule with an edit (the use
 * case, `team/approvals.ts`: `rule_from_edit`).
 */
import type { Approval, Risk } from "../../sdk/src/approval";
import { acceptsEdits, EDITED_INPUT_BYTES, editableInput, editProblem, type ToolInput } from "../../sdk/src/edit-input";
import { isAllowKind } from "../../sdk/src/protocol";
import { canonicalJson, sha256Hex } from "../crypto";
import { highRiskOf } from "../policy";
import { riskOf } from "./risk";
import type { ServedSession } from "./store";

/** An edit the gate takes: the input, its hash, and the tier of the request with it (the higher of both). */
export interface Edit {
  input: ToolInput;
  hash: string;
  risk: Risk;
}

export type EditCheck =
  | { ok: true; edit: Edit }
  | {
      ok: false;
      error: "edit_not_supported" | "edit_needs_allow" | "invalid_request" | "private_not_editable";
      message: string;
    };

/** The hash an edited input is known by (history, audit, the step-up's challenge): SHA-256 hex of its canonical JSON. */
export const editedInputHash = (input: ToolInput): string => sha256Hex(canonicalJson(input));

/**
 * Whether `updatedInput` may replace this pending request's input for an allow with `optionKind`.
 * Refused: a deny (`edit_needs_allow`); a request whose agent did not say it takes edits, or one
 * a quorum must allow when the edit is high-risk (`edit_not_supported`: the quorum's people
 * would each have to allow the same edit); input of another shape or too large (`invalid_request`).
 */
export function checkEdit(
  meta: ServedSession,
  pending: Approval,
  optionKind: string,
  updatedInput: ToolInput,
): EditCheck {
  if (!isAllowKind(optionKind)) {
    return { ok: false, error: "edit_needs_allow", message: "updatedInput goes only with an allow option" };
  }
  // A sealed request's input is ciphertext: nobody could check an edit against it (sealed.ts).
  if (pending.sealed) {
    return { ok: false, error: "private_not_editable", message: "a private request is allowed or denied as asked" };
  }
  const original = editableInput(pending.snapshot);
  if (!acceptsEdits(pending.snapshot) || original === undefined) {
    return { ok: false, error: "edit_not_supported", message: "this request's agent does not take edited input" };
  }
  const text = canonicalJson(updatedInput);
  if (new TextEncoder().encode(text).length > EDITED_INPUT_BYTES) {
    return { ok: false, error: "invalid_request", message: `updatedInput is over ${EDITED_INPUT_BYTES} bytes` };
  }
  const problem = editProblem(original, updatedInput);
  if (problem) return { ok: false, error: "invalid_request", message: problem };
  const edited = { ...pending.snapshot, toolCall: { ...pending.snapshot.toolCall, rawInput: updatedInput } };
  const risk: Risk = pending.risk === "high" || riskOf(meta.policy, edited) === "high" ? "high" : "normal";
  if (risk === "high" && (pending.quorum || highRiskOf(meta.policy).quorum > 1)) {
    const message = "a high-risk request that more than one person must allow is allowed only as asked";
    return { ok: false, error: "edit_not_supported", message };
  }
  return { ok: true, edit: { input: updatedInput, hash: sha256Hex(text), risk } };
}
