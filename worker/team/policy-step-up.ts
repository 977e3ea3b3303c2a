/**
 * The policy's step-up (docs/human-api.md "Weakening the policy"): an owner's passkey over one
 * change of the team policy, before a `PUT /v1/policy` that weakens it is taken.
 *
 * Owns: the policy's hash (what the challenge binds), issuing the options (owners only, and only
 * for a change that weakens the policy as it stands) and verifying an assertion against the
 * policy a `PUT` sends. Does not own: what counts as weaker (`policy-weakening.ts`), the challenge's
 * life and the assertion's checks (`step-up.ts`, shared with decisions), applying the change (`policy.ts`).
 */
import type { AuthenticationResponseJSON } from "@simplewebauthn/server";
import type { PolicyUpdate } from "../../sdk/src/human/policy";
import type { Role } from "../../sdk/src/human/roles";
import { type PolicyStepUpAnswer, policyStepUpChallenge } from "../../sdk/src/human/step-up";
import { canonicalJson, sha256Hex } from "../crypto";
import { getTeamPolicy, type StepUpChallengeRow } from "../db";
import { DomainError } from "../errors";
import { DEFAULT_POLICY, type TeamPolicy } from "../policy";
import { policyWeakenings } from "../policy-weakening";
import type { Env } from "../types";
import { issueStepUp, type RelyingParty, type StepUpCaller, verifyAssertion } from "./step-up";

/** Who may weaken the policy (with their passkey). */
export const WEAKEN_ROLES: readonly Role[] = ["owner"];

/** SHA-256 hex of the canonical JSON of a `PUT /v1/policy` body as validated (defaults filled in, no `stepUp`). */
export function policyHash(update: PolicyUpdate): string {
  return sha256Hex(canonicalJson(update));
}

/** The policy a body would store over `current`: without `limits`, the current ones stay. */
export function policyAfter(current: TeamPolicy, update: PolicyUpdate): TeamPolicy {
  return { ...update, limits: update.limits ?? current.limits ?? DEFAULT_POLICY.limits };
}

/** `403 forbidden` for anyone but an owner: only owners weaken the policy. */
export function assertMayWeaken(role: Role): void {
  if (!WEAKEN_ROLES.includes(role)) {
    throw new DomainError("forbidden", "only an owner, with their passkey, may weaken the team policy");
  }
}

/** `POST /v1/policy/step-up`: options around a challenge bound to this team and this policy's hash. */
export async function policyStepUpOptions(
  env: Env,
  rp: RelyingParty,
  who: StepUpCaller & { role: Role },
  update: PolicyUpdate,
): Promise<PolicyStepUpAnswer> {
  assertMayWeaken(who.role);
  const { policy: current } = await getTeamPolicy(env.DB, who.teamId);
  if (policyWeakenings(current, policyAfter(current, update)).length === 0) {
    throw new DomainError("step_up_not_needed", "this change does not weaken the policy: save it without a passkey");
  }
  const hash = policyHash(update);
  const subject = { purpose: "policy", subject: who.teamId, subjectHash: hash, optionId: null } as const;
  const issued = await issueStepUp(env, rp, who, subject, (nonce) => policyStepUpChallenge(who.teamId, hash, nonce));
  return { policyHash: hash, ...issued };
}

/** The passkey that confirmed a policy change, for its audit entry. */
export interface PolicyConfirmation {
  credentialId: string;
  at: number;
}

/** Verifies an owner's assertion over a challenge issued for this team and exactly this policy body. */
export async function verifyPolicyStepUp(
  env: Env,
  rp: RelyingParty,
  who: StepUpCaller & { role: Role },
  assertion: AuthenticationResponseJSON,
  update: PolicyUpdate,
): Promise<PolicyConfirmation> {
  assertMayWeaken(who.role);
  const hash = policyHash(update);
  const notThisChange = (issued: StepUpChallengeRow) =>
    issued.purpose !== "policy" || issued.subject !== who.teamId || issued.subjectHash !== hash
      ? "this step-up was for another change of the policy, or for a request"
      : null;
  const { credentialId, at } = await verifyAssertion(env, rp, who, assertion, notThisChange);
  return { credentialId, at };
}
