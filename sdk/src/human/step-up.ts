/**
 * Step-up for high-risk requests (docs/human-api.md "Step-up"): the challenge that binds a
 * passkey assertion to one request, the options answer, and the proof anyone can verify offline.
 *
 * Owns: the challenge derivation (`stepUpChallenge`, the one place the formula lives besides the
 * docs) and the schemas of `POST /v1/approvals/:id/step-up` and `GET /v1/approvals/:id/proof`.
 * Does not own: verification (the Worker, `worker/team/step-up.ts`) or who may ask (the routes).
 * Environment-neutral: WebCrypto only, so the Worker, the PWA and an offline verifier share it.
 */
import { z } from "zod";
import { approvalStateSchema } from "../approval.js";

/** The domain-separation prefix: a step-up challenge can never be mistaken for a sign-in's. */
export const STEP_UP_DOMAIN = "tapgate.step-up.v1";

/** The text hashed into the challenge: prefix, approval id, requestHash and nonce, one per line. */
export function stepUpChallengeInput(approvalId: string, requestHash: string, nonce: string): string {
  return [STEP_UP_DOMAIN, approvalId, requestHash, nonce].join("\n");
}

/** The WebAuthn challenge, base64url (no padding) of SHA-256 over `stepUpChallengeInput`. */
export async function stepUpChallenge(approvalId: string, requestHash: string, nonce: string): Promise<string> {
  const input = new TextEncoder().encode(stepUpChallengeInput(approvalId, requestHash, nonce));
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", input));
  let binary = "";
  for (const byte of digest) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** `POST /v1/approvals/:id/step-up`'s answer: WebAuthn request options around the bound challenge. */
export const stepUpOptionsAnswerSchema = z.object({
  approvalId: z.string(),
  requestHash: z.string(),
  nonce: z.string(),
  expiresAt: z.number(),
  /** `PublicKeyCredentialRequestOptionsJSON` (typed by the WebAuthn library): `userVerification: "required"`. */
  options: z.looseObject({ challenge: z.string() }),
});
export type StepUpOptionsAnswer = z.infer<typeof stepUpOptionsAnswerSchema>;

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
  /** When the Worker verified it (ms). */
  at: z.number(),
  nonce: z.string(),
  /** `stepUpChallenge(approvalId, requestHash, nonce)`: what `clientDataJSON.challenge` must be. */
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
