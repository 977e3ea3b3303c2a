/**
 * Step-up in the browser. Allowing a high-risk request: ask the server for a challenge bound to
 * this request and option, have the person's passkey sign it (with user verification: PIN,
 * fingerprint or face), and send the assertion with the decision. Each allow gets its own
 * step-up; a deny never needs one. Saving a policy that weakens it: the server answers
 * `step_up_required`, the owner's passkey signs a challenge bound to that policy, and it is sent again.
 *
 * Owns: the order of those steps in the browser. Does not own: whether a request is high-risk
 * (the approval says, `risk`), whether a change weakens the policy (the server says) or what the
 * server checks (docs/human-api.md "Step-up", "Weakening the policy").
 */

import type { PublicKeyCredentialRequestOptionsJSON } from "@simplewebauthn/browser";
import { startAuthentication } from "@simplewebauthn/browser";
import type { DecisionRule, PolicyBody } from "../../sdk/src/human/index";
import { ApiError, type ApprovalView, api } from "./api";

/** The passkey's assertion over `options`; `unfinished` is the words when the person or the browser gives up. */
async function signWithPasskey(options: { challenge: string }, unfinished: string) {
  try {
    return await startAuthentication({ optionsJSON: options as unknown as PublicKeyCredentialRequestOptionsJSON });
  } catch {
    throw new Error(unfinished);
  }
}

/** Whether choosing this option needs the passkey first. */
export const needsStepUp = (approval: ApprovalView, optionId: string) =>
  approval.risk === "high" && !!approval.options.find((o) => o.optionId === optionId)?.kind.startsWith("allow");

/**
 * The decision (with `rule`: and a standing rule; with `reason`: words for the agent; with
 * `updatedInput`: an allow of edited input), with a fresh passkey assertion when the option needs
 * one, or when the server says the edit made the request high-risk (`step_up_required`).
 */
export async function decideWithStepUp(
  approval: ApprovalView,
  optionId: string,
  extra: {
    rule?: DecisionRule | undefined;
    reason?: string | undefined;
    updatedInput?: Record<string, unknown> | undefined;
  } = {},
) {
  const { rule, reason, updatedInput } = extra;
  const plain = { ...(rule && { rule }), ...(reason && { reason }), ...(updatedInput && { updatedInput }) };
  if (!needsStepUp(approval, optionId)) {
    try {
      return await api.decide(approval.id, optionId, approval.requestHash, plain);
    } catch (e) {
      // The gate classifies an edit again: one that made the request high-risk needs a step-up for that edit.
      if (!updatedInput || !(e instanceof ApiError) || e.code !== "step_up_required") throw e;
    }
  }
  const { options } = await api.stepUpOptions(approval.id, optionId, updatedInput);
  const assertion = await signWithPasskey(
    options,
    "The passkey check did not finish, so nothing was decided. Try again to allow it.",
  );
  return api.decide(approval.id, optionId, approval.requestHash, { ...plain, stepUp: assertion });
}

/** Saves the policy; a change that weakens it is confirmed with the owner's passkey first, when the server asks. */
export async function savePolicyWithStepUp(policy: PolicyBody) {
  try {
    return await api.setPolicy(policy);
  } catch (e) {
    if (!(e instanceof ApiError) || e.code !== "step_up_required") throw e;
  }
  const { options } = await api.policyStepUp(policy);
  const assertion = await signWithPasskey(
    options,
    "The passkey check did not finish, so the policy was not changed. Save again to confirm with your passkey.",
  );
  return api.setPolicy(policy, assertion);
}
