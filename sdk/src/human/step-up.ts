/**
 * Step-up (docs/human-api.md "Step-up"): the challenges that bind a passkey assertion to one
 * allow of a high-risk request (its approval, `requestHash` and option) or to one weakening of
 * the team policy (its team and the new policy's hash), the options answers, and the proof
 * anyone can verify offline.
 *
 * Owns: the challenge derivations (`stepUpChallenge`, `policyStepUpChallenge`: the one place the
 * formulas live besides the docs) and the schemas of `POST /v1/approvals/:id/step-up`, `GET
 * /v1/approvals/:id/proof` and `POST /v1/policy/step-up`. Does not own: verification (the Worker,
 * `worker/team/step-up.ts`) or who may ask (the routes). Environment-neutral: WebCrypto only, so
 * the Worker, the PWA and an offline verifier share it.
 */
import { z } from "zod";
import { approvalStateSchema } from "../approval.js";
import { policyBodySchema } from "./policy.js";

/**
 * The domain-separation prefix: a step-up challenge can never be mistaken for a sign-in's or a
 * policy step-up's. v2 commits to the option too (v1 did not).
 */
export const STEP_UP_DOMAIN = "tapgate.step-up.v2";
/** The prefix of a policy step-up's challenge. */
export const POLICY_STEP_UP_DOMAIN = "tapgate.policy-step-up.v1";

/** The prefix of an allow with edited input: v3 commits to the edited input's hash as well. */
export const STEP_UP_EDIT_DOMAIN = "tapgate.step-up.v3";

/**
 * The text hashed into the challenge: prefix, approval id, requestHash, optionId and nonce, one
 * per line (v2); an allow with edited input has the v3 prefix and its `editedInputHash` before
 * the nonce, so a step-up for the request as asked never covers an edit, nor one edit another.
 */
export function stepUpChallengeInput(
  approvalId: string,
  requestHash: string,
  optionId: string,
  nonce: string,
  editedInputHash?: string | null,
): string {
  if (editedInputHash) {
    return [STEP_UP_EDIT_DOMAIN, approvalId, requestHash, optionId, editedInputHash, nonce].join("\n");
  }
  return [STEP_UP_DOMAIN, approvalId, requestHash, optionId, nonce].join("\n");
}

/** base64url (no padding) of SHA-256 over `text`'s UTF-8. */
async function challengeOf(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  let binary = "";
  for (const byte of digest) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The WebAuthn challenge of an allow: base64url (no padding) of SHA-256 over `stepUpChallengeInput`. */
export function stepUpChallenge(
  approvalId: string,
  requestHash: string,
  optionId: string,
  nonce: string,
  editedInputHash?: string | null,
) {
  return challengeOf(stepUpChallengeInput(approvalId, requestHash, optionId, nonce, editedInputHash));
}

/** The WebAuthn challenge of a policy change: SHA-256 over prefix, team id, the policy's hash and nonce, one per line. */
export function policyStepUpChallenge(teamId: string, policyHash: string, nonce: string) {
  return challengeOf([POLICY_STEP_UP_DOMAIN, teamId, policyHash, nonce].join("\n"));
}

/**
 * `POST /v1/approvals/:id/step-up`: the option the allow will choose, and the edited input it
 * will carry, if any (the challenge commits to both).
 */
export const stepUpOptionsBodySchema = z
  .object({ optionId: z.string().min(1).max(128), updatedInput: z.record(z.string(), z.unknown()).optional() })
  .strict();
export type StepUpOptionsBody = z.infer<typeof stepUpOptionsBodySchema>;

/** `PublicKeyCredentialRequestOptionsJSON` (typed by the WebAuthn library): `userVerification: "required"`. */
const requestOptionsSchema = z.looseObject({ challenge: z.string() });

/** `POST /v1/approvals/:id/step-up`'s answer: WebAuthn request options around the bound challenge. */
export const stepUpOptionsAnswerSchema = z.object({
  approvalId: z.string(),
  requestHash: z.string(),
  optionId: z.string(),
  /** With `updatedInput`: SHA-256 hex of its canonical JSON, which the challenge commits to. */
  editedInputHash: z.string().optional(),
  nonce: z.string(),
  expiresAt: z.number(),
  options: requestOptionsSchema,
});
export type StepUpOptionsAnswer = z.infer<typeof stepUpOptionsAnswerSchema>;

/** `POST /v1/policy/step-up`: the policy a `PUT /v1/policy` will send (the challenge commits to its hash). */
export const policyStepUpBodySchema = z.object({ policy: policyBodySchema }).strict();

/** Its answer: options around a challenge bound to this team and `policyHash`, 2 minutes, single use. */
export const policyStepUpAnswerSchema = z.object({
  /** SHA-256 hex of the canonical JSON of the policy as validated (defaults filled in). */
  policyHash: z.string(),
  nonce: z.string(),
  expiresAt: z.number(),
  options: requestOptionsSchema,
});
export type PolicyStepUpAnswer = z.infer<typeof policyStepUpAnswerSchema>;

/** The approver's public key, in the forms an offline verifier needs. */
export const stepUpPublicKeySchema = z.object({
  /** The COSE key as registered, base64url. */
  cose: z.string(),
  /** COSE algorithm: -7 ES256, -257 RS256, -8 EdDSA. */
  alg: z.number().int(),
  /** SubjectPublicKeyInfo DER, base64url (`crypto.subtle.importKey("spki", …)`). */
  spki: z.string(),
  jwk: z.looseObject({ kty: z.string() }),
});

/** One verified passkey assertion an allow carried: everything needed to check it without Tapgate. */
export const stepUpAssertionSchema = z.object({
  userId: z.string(),
  name: z.string(),
  /** The option the assertion allowed with. */
  optionId: z.string(),
  /** The edited input the allow carried (its hash: the challenge's v3 line), when it carried one. */
  editedInputHash: z.string().optional(),
  /** When the Worker verified it (ms). */
  at: z.number(),
  nonce: z.string(),
  /** `stepUpChallenge(approvalId, requestHash, optionId, nonce, editedInputHash)`: what `clientDataJSON.challenge` must be. */
  challenge: z.string(),
  rpId: z.string(),
  origin: z.string(),
  credentialId: z.string(),
  publicKey: stepUpPublicKeySchema,
  /** base64url, as the authenticator returned them. */
  authenticatorData: z.string(),
  clientDataJSON: z.string(),
  signature: z.string(),
});
export type StepUpAssertion = z.infer<typeof stepUpAssertionSchema>;

/** An assertion with what its challenge committed to, as the Worker keeps it (a proof states these once). */
export type BoundStepUpAssertion = StepUpAssertion & { approvalId: string; requestHash: string };

/** `GET /v1/approvals/:id/proof`: the request and every step-up its allows carried (`[]` when none). */
export const stepUpProofSchema = z.object({
  approvalId: z.string(),
  requestHash: z.string(),
  state: approvalStateSchema,
  assertions: z.array(stepUpAssertionSchema),
});
export type StepUpProof = z.infer<typeof stepUpProofSchema>;
