/**
 * Whether a device key really is its person's (docs/threat-model.md "Private mode"): the key's id
 * is its own, and its endorsement is a user-present, user-verified WebAuthn assertion of the
 * person's passkey over `deviceKeyChallenge(teamId, publicKey)` for the team's relying party.
 * `@simplewebauthn/server` checks the assertion (client data, RP id hash, flags, the COSE key's
 * signature over `authenticatorData ‖ SHA-256(clientDataJSON)`); it is loaded only when a private
 * team's keys are checked.
 *
 * Owns: the check of one recipient. Does not own: which passkey is that person's (the pins,
 * `recipients.ts`) or where recipients come from. Environment-neutral (WebCrypto).
 */
import type { Recipient } from "./contract.js";
import { deviceIdOf, deviceKeyChallenge, fromBase64url } from "./envelope.js";

/** The relying party the team's passkeys belong to, as `GET /v1/agent/recipients` names it. */
export interface RelyingParty {
  rpId: string;
  origin: string;
}

/** Why a recipient's key is not its person's, or null when it is. Never throws. */
export async function endorsementProblem(
  teamId: string,
  rp: RelyingParty,
  recipient: Recipient,
): Promise<string | null> {
  if (deviceIdOf(recipient.publicKey) !== recipient.deviceId) return "its device id is not its key's";
  const { verifyAuthenticationResponse } = await import("@simplewebauthn/server");
  const e = recipient.endorsement;
  try {
    const { verified } = await verifyAuthenticationResponse({
      response: {
        id: e.credentialId,
        rawId: e.credentialId,
        type: "public-key",
        response: { authenticatorData: e.authenticatorData, clientDataJSON: e.clientDataJSON, signature: e.signature },
        clientExtensionResults: {},
      },
      expectedType: "webauthn.get",
      expectedChallenge: deviceKeyChallenge(teamId, recipient.publicKey),
      expectedOrigin: rp.origin,
      expectedRPID: rp.rpId,
      requireUserVerification: true,
      credential: { id: e.credentialId, publicKey: fromBase64url(e.credentialPublicKey), counter: 0 },
    });
    return verified ? null : "its endorsement's signature does not verify";
  } catch (err) {
    return `its endorsement does not verify (${err instanceof Error ? err.message : String(err)})`;
  }
}
