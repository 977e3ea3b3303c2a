/**
 * Allowing a high-risk request: ask the server for a challenge bound to this request and option, have the
 * person's passkey sign it (with user verification: PIN, fingerprint or face), and send the
 * assertion with the decision. Each allow gets its own step-up; a deny never needs one.
 *
 * Owns: the order of those steps in the browser. Does not own: whether a request is high-risk
 * (the approval says, `risk`) or what the server checks (docs/human-api.md "Step-up").
 */

import type { PublicKeyCredentialRequestOptionsJSON } from "@simplewebauthn/browser";
import { startAuthentication } from "@simplewebauthn/browser";
import type { DecisionRule } from "../../sdk/src/human/index";
import { type ApprovalView, api } from "./api";

/** Whether choosing this option needs the passkey first. */
export const needsStepUp = (approval: ApprovalView, optionId: string) =>
  approval.risk === "high" && !!approval.options.find((o) => o.optionId === optionId)?.kind.startsWith("allow");

/**
 * The decision (with `rule`: and a standing rule; with `reason`: words for the agent), with a
 * fresh passkey assertion when the option needs one.
 */
export async function decideWithStepUp(
  approval: ApprovalView,
  optionId: string,
  extra: { rule?: DecisionRule | undefined; reason?: string | undefined } = {},
) {
  const { rule, reason } = extra;
  const plain = { ...(rule && { rule }), ...(reason && { reason }) };
  if (!needsStepUp(approval, optionId)) return api.decide(approval.id, optionId, approval.requestHash, plain);
  const { options } = await api.stepUpOptions(approval.id, optionId);
  let assertion: Awaited<ReturnType<typeof startAuthentication>>;
  try {
    assertion = await startAuthentication({ optionsJSON: options as unknown as PublicKeyCredentialRequestOptionsJSON });
  } catch {
    throw new Error("The passkey check did not finish, so nothing was decided. Try again to allow it.");
  }
  return api.decide(approval.id, optionId, approval.requestHash, { ...plain, stepUp: assertion });
}
