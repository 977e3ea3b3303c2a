/**
 * Step-up, as use cases: issuing WebAuthn request options whose challenge commits to one thing
 * (an allow of one approval, its `requestHash` and option; or one change of the team policy:
 * `team/policy-step-up.ts`), verifying the assertion that comes back, and the proof an
 * approval's allows leave behind (docs/human-api.md "Step-up").
 *
 * Owns: the step-up challenge's life (2 minutes, single-use, this person's, this team's, this
 * purpose's and subject's), the precise refusal for each way an assertion can be wrong, and the
 * proof's shape. Does not own: whether an allow needs a step-up or completes a quorum (the gate,
 * `gate/risk.ts`), whether a policy change needs one (`policy-weakening.ts`), the challenge
 * formulas (`sdk/src/human/step-up.ts`), the SQL (`db/step-up.ts`, `db/passkeys.ts`).
 */
import {
  type AuthenticationResponseJSON,
  generateAuthenticationOptions,
  verifyAuthenticationResponse,
} from "@simplewebauthn/server";
import { isoBase64URL } from "@simplewebauthn/server/helpers";
import type { Approval } from "../../sdk/src/approval";
import { acceptsEdits } from "../../sdk/src/edit-input";
import type { ErrorCode } from "../../sdk/src/errors";
import { type StepUpOptionsAnswer, type StepUpProof, stepUpChallenge } from "../../sdk/src/human/step-up";
import { isAllowKind } from "../../sdk/src/protocol";
import {
  createStepUpChallenge,
  findPasskey,
  findStepUpChallenge,
  getApprovalStepUps,
  listPasskeys,
  recordPasskeyUse,
  type StepUpChallengeRow,
  useStepUpChallenge,
} from "../db";
import { REQUEST_BUDGET_MS, withDeadline } from "../deadline";
import { DomainError } from "../errors";
import { approvalAtGate, gateFor, type VerifiedStepUp } from "../gate/api";
import { editedInputHash } from "../gate/edit";
import type { Env } from "../types";
import { publicKeyForms } from "./step-up-key";

/** Long enough to find the phone and touch the sensor; short, since it allows one dangerous thing. */
export const STEP_UP_TTL_MS = 2 * 60 * 1000;

export interface RelyingParty {
  rpID: string;
  origin: string;
}

/** Who steps up: the signed-in decider (or owner, for the policy). */
export interface StepUpCaller {
  teamId: string;
  userId: string;
  name: string;
}

/** What a challenge commits to, as stored with it. */
export type StepUpSubject = Pick<StepUpChallengeRow, "purpose" | "subject" | "subjectHash" | "optionId"> &
  Partial<Pick<StepUpChallengeRow, "editedInputHash">>;

/** Request options around a fresh challenge, and what derived it. */
export interface IssuedStepUp {
  nonce: string;
  expiresAt: number;
  options: StepUpOptionsAnswer["options"];
}

const USER_VERIFIED = 0x04;

const notFound = () => new DomainError("not_found", "no such approval");
const refused = (code: ErrorCode, message?: string): never => {
  throw new DomainError(code, message);
};

function gateOf(env: Env, approvalId: string) {
  const gate = gateFor(env, approvalId);
  if (!gate) throw notFound();
  return gate;
}

/**
 * Request options around `challenge` (base64url) for this person: their own passkeys, user
 * verification required (`409 no_passkey` without one). Shared with device keys, whose
 * challenge is derived rather than stored (`device-keys.ts`).
 */
export async function passkeyRequestOptions(
  env: Env,
  rp: RelyingParty,
  userId: string,
  challenge: string,
): Promise<StepUpOptionsAnswer["options"]> {
  const passkeys = await listPasskeys(env.DB, userId);
  if (passkeys.length === 0) refused("no_passkey", "add a passkey to your account (Devices) to confirm this");
  const options = await generateAuthenticationOptions({
    rpID: rp.rpID,
    challenge: isoBase64URL.toBuffer(challenge),
    timeout: STEP_UP_TTL_MS,
    userVerification: "required",
    allowCredentials: passkeys.map(({ id, transports }) => ({ id, transports })),
  });
  return { ...options };
}

/**
 * Issues a challenge for `subject` (derived from a fresh nonce by `derive`), stored for 2 minutes
 * for this person, and the request options around it: their own passkeys, user verification required.
 */
export async function issueStepUp(
  env: Env,
  rp: RelyingParty,
  who: StepUpCaller,
  subject: StepUpSubject,
  derive: (nonce: string) => Promise<string>,
): Promise<IssuedStepUp> {
  const now = Date.now();
  const nonce = isoBase64URL.fromBuffer(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = await derive(nonce);
  const options = await passkeyRequestOptions(env, rp, who.userId, challenge);
  const expiresAt = now + STEP_UP_TTL_MS;
  await createStepUpChallenge(env.DB, { challenge, ...subject, nonce, expiresAt, ...who, now });
  return { nonce, expiresAt, options };
}

/** `POST /v1/approvals/:id/step-up`: request options around a challenge bound to this approval as it stands and this option. */
export async function stepUpOptions(
  env: Env,
  rp: RelyingParty,
  who: StepUpCaller,
  approvalId: string,
  { optionId, updatedInput }: { optionId: string; updatedInput?: Record<string, unknown> | undefined },
): Promise<StepUpOptionsAnswer> {
  const approval = await approvalAtGate(gateOf(env, approvalId), who.teamId, approvalId);
  if (!approval) throw notFound();
  if (approval.state !== "pending") refused("step_up_not_needed", "this request is no longer pending");
  // Whether an edit makes the request high-risk is the gate's to say when it is sent: `403 step_up_required`.
  if (approval.risk !== "high" && updatedInput === undefined) {
    refused("step_up_not_needed", "this request is not high-risk: allow it without");
  }
  if (updatedInput !== undefined && approval.sealed) {
    refused("private_not_editable", "a private request is allowed or denied as asked");
  }
  if (updatedInput !== undefined && !acceptsEdits(approval.snapshot)) {
    refused("edit_not_supported", "this request's agent does not take edited input");
  }
  const option = approval.options.find((o) => o.optionId === optionId);
  if (!option) refused("option_not_offered", `option ${JSON.stringify(optionId)} was not offered`);
  if (!option || !isAllowKind(option.kind)) refused("step_up_not_needed", "only an allow needs a step-up");
  if (approval.quorum?.allowedBy.some((p) => p.userId === who.userId)) {
    throw new DomainError("second_approver_required", undefined, { extra: { approval } });
  }
  const { id, requestHash } = approval;
  const editHash = updatedInput === undefined ? null : editedInputHash(updatedInput);
  const subject = { purpose: "decision", subject: id, subjectHash: requestHash, optionId, editedInputHash: editHash };
  const issued = await issueStepUp(env, rp, who, subject as StepUpSubject, (nonce) =>
    stepUpChallenge(id, requestHash, optionId, nonce, editHash),
  );
  return { approvalId: id, requestHash, optionId, ...(editHash && { editedInputHash: editHash }), ...issued };
}

/** The JSON an assertion's clientDataJSON holds, or null when it is not JSON. */
export function clientDataOf(assertion: AuthenticationResponseJSON): { type?: unknown; challenge?: unknown } | null {
  try {
    return JSON.parse(new TextDecoder().decode(isoBase64URL.toBuffer(assertion.response.clientDataJSON)));
  } catch {
    return null;
  }
}

/** An assertion as verified: the challenge it answered, the passkey that signed it, when. */
export interface VerifiedAssertion extends VerifiedPasskey {
  issued: StepUpChallengeRow;
}

/**
 * Verifies a step-up: an assertion by the caller's own passkey, with user verification, over a
 * challenge issued to them and not used before, whose subject `wrongSubject` accepts (it answers
 * why not, for `403 step_up_wrong_request`). The challenge is spent before the signature is
 * checked, so each one gets one try. Each failure has its own code.
 */
export async function verifyAssertion(
  env: Env,
  rp: RelyingParty,
  who: StepUpCaller,
  assertion: AuthenticationResponseJSON,
  wrongSubject: (issued: StepUpChallengeRow) => string | null,
): Promise<VerifiedAssertion> {
  const now = Date.now();
  const clientData = clientDataOf(assertion);
  if (clientData?.type !== "webauthn.get" || typeof clientData.challenge !== "string") {
    return refused("step_up_failed", "clientDataJSON is not a WebAuthn assertion's");
  }
  const issued = await findStepUpChallenge(env.DB, { challenge: clientData.challenge, ...who });
  if (!issued) return refused("step_up_failed", "no step-up was issued to you with this challenge; ask for a new one");
  const wrong = wrongSubject(issued);
  if (wrong !== null) return refused("step_up_wrong_request", wrong);
  if (issued.usedAt !== null) return refused("step_up_replayed");
  if (issued.expiresAt <= now) return refused("step_up_failed", "this step-up expired; ask for a new one");
  if (!(await useStepUpChallenge(env.DB, issued.challenge, now))) return refused("step_up_replayed");
  return { issued, ...(await verifyPasskeyAssertion(env, rp, who.userId, assertion, issued.challenge)) };
}

/** A passkey assertion as verified: the passkey that signed it (its COSE public key, base64url), when. */
export interface VerifiedPasskey {
  credentialId: string;
  publicKey: string;
  at: number;
}

/**
 * Verifies an assertion over `challenge` by one of this person's own passkeys, with user
 * verification, and records its use (the counter must grow). Each failure has its own code:
 * `step_up_no_user_verification`, else `step_up_failed`.
 */
export async function verifyPasskeyAssertion(
  env: Env,
  rp: RelyingParty,
  userId: string,
  assertion: AuthenticationResponseJSON,
  challenge: string,
): Promise<VerifiedPasskey> {
  const now = Date.now();
  const authData = isoBase64URL.toBuffer(assertion.response.authenticatorData);
  if (authData.length < 37 || ((authData[32] ?? 0) & USER_VERIFIED) === 0) {
    return refused("step_up_no_user_verification");
  }
  const stored = await findPasskey(env.DB, assertion.id);
  if (!stored || stored.userId !== userId) return refused("step_up_failed", "not one of your passkeys");
  let counter: number;
  try {
    const { verified, authenticationInfo } = await verifyAuthenticationResponse({
      response: assertion,
      expectedChallenge: challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.rpID,
      credential: {
        id: stored.id,
        publicKey: isoBase64URL.toBuffer(stored.publicKey),
        counter: stored.counter,
        transports: stored.transports,
      },
      requireUserVerification: true,
    });
    if (!verified) return refused("step_up_failed");
    counter = authenticationInfo.newCounter;
  } catch (err) {
    console.warn("step-up rejected:", err instanceof Error ? err.message : "unknown error");
    return refused("step_up_failed");
  }
  // The counter must grow (a cloned authenticator would repeat one), as at sign-in.
  if (!(await recordPasskeyUse(env.DB, { id: stored.id, counter, now }))) return refused("step_up_failed");
  return { credentialId: stored.id, publicKey: stored.publicKey, at: now };
}

/** Why a challenge is not for this allow: another approval, another purpose, another option, another edit (or none). */
function notThisAllow(approvalId: string, optionId: string, editHash: string | null) {
  return (issued: StepUpChallengeRow): string | null => {
    if (issued.purpose !== "decision" || issued.subject !== approvalId) return "this step-up was for another request";
    if (issued.optionId !== optionId) return `this step-up was for option ${JSON.stringify(issued.optionId)}`;
    if (issued.editedInputHash !== editHash) {
      return issued.editedInputHash === null
        ? "this step-up was for the request as asked, not for edited input; ask for one with updatedInput"
        : "this step-up was for other edited input";
    }
    return null;
  };
}

/**
 * Verifies a decision's step-up: an assertion over a challenge issued to the decider for this
 * approval and this option. The assertion as verified, with what it committed to.
 */
export async function verifyStepUp(
  env: Env,
  rp: RelyingParty,
  who: StepUpCaller & { approvalId: string; optionId: string; updatedInput?: Record<string, unknown> | undefined },
  assertion: AuthenticationResponseJSON,
): Promise<VerifiedStepUp> {
  const editHash = who.updatedInput === undefined ? null : editedInputHash(who.updatedInput);
  const verified = await verifyAssertion(env, rp, who, assertion, notThisAllow(who.approvalId, who.optionId, editHash));
  const { issued } = verified;
  return {
    approvalId: issued.subject,
    requestHash: issued.subjectHash,
    userId: who.userId,
    name: who.name,
    optionId: who.optionId,
    ...(issued.editedInputHash !== null && { editedInputHash: issued.editedInputHash }),
    at: verified.at,
    nonce: issued.nonce,
    challenge: issued.challenge,
    rpId: rp.rpID,
    origin: rp.origin,
    credentialId: verified.credentialId,
    publicKey: await publicKeyForms(verified.publicKey),
    authenticatorData: assertion.response.authenticatorData,
    clientDataJSON: assertion.response.clientDataJSON,
    signature: assertion.response.signature,
  };
}

/**
 * A high-risk allow retried after its answer was lost carries the assertion whose challenge the
 * first try spent. When the approval keeps that very assertion as this person's step-up for this
 * option and request, the retry is a repeat: the approval as it stands (the stored result), not
 * `step_up_replayed`. Null otherwise.
 */
export async function repeatedStepUp(
  env: Env,
  who: { teamId: string; userId: string; approvalId: string; optionId: string; requestHash: string },
  assertion: AuthenticationResponseJSON,
): Promise<Approval | null> {
  const found = await stepUpsOf(env, who.teamId, who.approvalId);
  if (!found || found.approval.requestHash !== who.requestHash) return null;
  const same = found.stepUps.some(
    (s) =>
      s.userId === who.userId &&
      s.optionId === who.optionId &&
      s.credentialId === assertion.id &&
      s.signature === assertion.response.signature,
  );
  return same ? found.approval : null;
}

/**
 * The approval and its kept step-ups: from the gate while it keeps the request, else from D1. A
 * gate that does not answer in time is a `503`, never D1's copy, which may lag it by a flush: a
 * retried allow would be refused `step_up_replayed` for an allow that went through.
 */
async function stepUpsOf(env: Env, teamId: string, approvalId: string) {
  const held = (await withDeadline(
    gateOf(env, approvalId).stepUps(teamId, approvalId),
    REQUEST_BUDGET_MS,
    "gate.stepUps",
  )) as {
    approval: Approval;
    stepUps: VerifiedStepUp[];
  } | null;
  return held ?? (await getApprovalStepUps(env.DB, teamId, approvalId));
}

/** `GET /v1/approvals/:id/proof`: from the gate while it keeps the request, else from D1. */
export async function stepUpProof(env: Env, teamId: string, approvalId: string): Promise<StepUpProof> {
  const found = await stepUpsOf(env, teamId, approvalId);
  if (!found) throw notFound();
  const { approval, stepUps } = found;
  return {
    approvalId: approval.id,
    requestHash: approval.requestHash,
    state: approval.state,
    // What the challenge committed to is the approval's own id and hash, given once above.
    assertions: stepUps.map(({ approvalId: _id, requestHash: _hash, ...assertion }) => assertion),
  };
}
