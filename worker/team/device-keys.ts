/**
 * Device keys as use cases (docs/human-api.md "Device keys"): the options a browser's passkey
 * signs to endorse its key, registering the key with that endorsement, listing the team's keys,
 * removing one; and the recipients an agent seals a private request to (`GET /v1/agent/recipients`).
 *
 * Owns: what an endorsement must be (this person's own passkey, user verification, over
 * `deviceKeyChallenge(teamId, publicKey)`: derived, so nothing is stored before it), who may
 * remove which key, and who is a recipient under the policy. Does not own: the SQL and the
 * removal cascades (`db/device-keys.ts`, migration 0038), the passkey checks shared with step-up
 * (`step-up.ts`), the envelope and the challenge's formula (`sdk/src/private/envelope.ts`).
 */
import type { AuthenticationResponseJSON } from "@simplewebauthn/server";
import { isAdminRole } from "../../sdk/src/human/roles";
import type { DeviceKey, DeviceKeyEndorsement, RecipientsResponse } from "../../sdk/src/private/contract";
import { deviceIdOf, deviceKeyChallenge } from "../../sdk/src/private/device-id";
import {
  type DeviceKeyRow,
  deleteDeviceKey,
  findDeviceKey,
  getTeamPolicy,
  listDeviceKeys,
  listRecipientKeys,
  saveDeviceKey,
} from "../db";
import { DomainError } from "../errors";
import { highRiskOf } from "../policy";
import { DECIDER_ROLES } from "../roles";
import type { AgentIdentity, Env, WebIdentity } from "../types";
import { chainQueued } from "./audit";
import { auditEvents, userActor } from "./audit-events";
import { clientDataOf, passkeyRequestOptions, type RelyingParty, verifyPasskeyAssertion } from "./step-up";

/** Keys one person may hold in one team: as many as push devices. */
export const MAX_DEVICE_KEYS_PER_PERSON = 20;

/** `POST /v1/devices/keys/options`: request options whose challenge endorses `publicKey` for the caller's team. */
export async function deviceKeyOptions(env: Env, rp: RelyingParty, w: WebIdentity, publicKey: string) {
  const challenge = deviceKeyChallenge(w.teamId, publicKey);
  const options = await passkeyRequestOptions(env, rp, w.userId, challenge);
  return { deviceId: deviceIdOf(publicKey), challenge, options };
}

export interface DeviceKeyRegistration {
  publicKey: string;
  name: string;
  pushDeviceId?: string | undefined;
  assertion: AuthenticationResponseJSON;
}

/**
 * `POST /v1/devices/keys`: verifies the assertion (the caller's own passkey, user verification,
 * over this team's challenge for this key), then stores the key with its endorsement. The same
 * key again replaces its row; another person's → `409 device_key_taken`.
 */
export async function registerDeviceKey(
  env: Env,
  rp: RelyingParty,
  w: WebIdentity,
  r: DeviceKeyRegistration,
): Promise<DeviceKey> {
  const challenge = deviceKeyChallenge(w.teamId, r.publicKey);
  if (clientDataOf(r.assertion)?.challenge !== challenge) {
    throw new DomainError(
      "step_up_failed",
      "this assertion is not over this key for this team: sign the challenge of POST /v1/devices/keys/options",
    );
  }
  const passkey = await verifyPasskeyAssertion(env, rp, w.userId, r.assertion, challenge);
  const deviceId = deviceIdOf(r.publicKey);
  const { authenticatorData, clientDataJSON, signature } = r.assertion.response;
  const endorsement: DeviceKeyEndorsement = {
    credentialId: passkey.credentialId,
    credentialPublicKey: passkey.publicKey,
    authenticatorData,
    clientDataJSON,
    signature,
  };
  const now = Date.now();
  const result = await saveDeviceKey(
    env.DB,
    {
      teamId: w.teamId,
      deviceId,
      userId: w.userId,
      webSessionId: w.sessionId,
      pushDeviceId: r.pushDeviceId ?? null,
      credentialId: passkey.credentialId,
      publicKey: r.publicKey,
      endorsement,
      name: r.name,
      now,
      limit: MAX_DEVICE_KEYS_PER_PERSON,
    },
    auditEvents.deviceKeyAdded(
      { teamId: w.teamId, actor: userActor(w.userId), at: now },
      { userId: w.userId, deviceId, name: r.name, credentialId: passkey.credentialId },
    ),
  );
  if ("refused" in result) throw refusal(result.refused);
  await chainQueued(env, w.teamId);
  return asDeviceKey(result.saved, w);
}

function refusal(why: "taken" | "no_push_device" | "too_many"): DomainError {
  switch (why) {
    case "taken":
      return new DomainError("device_key_taken", "another member of this team registered this key");
    case "no_push_device":
      return new DomainError("not_found", "no such push device of yours (pushDeviceId)");
    case "too_many":
      return new DomainError(
        "too_many_devices",
        `at most ${MAX_DEVICE_KEYS_PER_PERSON} device keys per person; remove one first`,
      );
  }
}

function asDeviceKey(k: DeviceKeyRow, w: WebIdentity): DeviceKey {
  return {
    deviceId: k.deviceId,
    userId: k.userId,
    name: k.name,
    createdAt: k.createdAt,
    pushDeviceId: k.pushDeviceId,
    current: k.webSessionId === w.sessionId,
  };
}

/** `GET /v1/devices/keys`: every key of the caller's team (whose browsers can read private requests). */
export async function teamDeviceKeys(env: Env, w: WebIdentity): Promise<DeviceKey[]> {
  return (await listDeviceKeys(env.DB, w.teamId)).map((k) => asDeviceKey(k, w));
}

/** `DELETE /v1/devices/keys/:deviceId`: one's own key, or (admins, owners) anyone's; another team's is 404. */
export async function removeDeviceKey(env: Env, w: WebIdentity, deviceId: string): Promise<void> {
  const key = await findDeviceKey(env.DB, w.teamId, deviceId);
  if (!key) throw new DomainError("not_found", "no such device key");
  if (key.userId !== w.userId && !isAdminRole(w.role)) {
    throw new DomainError("forbidden", "only its person, an admin or an owner may remove a device key");
  }
  const event = auditEvents.deviceKeyRemoved(
    { teamId: w.teamId, actor: userActor(w.userId), at: Date.now() },
    { userId: key.userId, deviceId, name: key.name },
  );
  if (!(await deleteDeviceKey(env.DB, w.teamId, deviceId, event))) {
    throw new DomainError("not_found", "no such device key");
  }
  await chainQueued(env, w.teamId);
}

/**
 * `GET /v1/agent/recipients`: the devices of everyone who may decide this key's requests under
 * the policy now (`deciders: session_owner`: the key's owner alone; else every member with a
 * deciding role), and what sealing needs besides. Viewers' keys are never recipients.
 */
export async function recipientsFor(env: Env, rp: RelyingParty, agent: AgentIdentity): Promise<RecipientsResponse> {
  const { policy } = await getTeamPolicy(env.DB, agent.teamId);
  const onlyOwner = policy.deciders === "session_owner" ? agent.userId : null;
  const recipients = await listRecipientKeys(env.DB, agent.teamId, DECIDER_ROLES, onlyOwner);
  return {
    teamId: agent.teamId,
    privacy: policy.privacy,
    rpId: rp.rpID,
    origin: rp.origin,
    highRisk: highRiskOf(policy).patterns,
    recipients,
  };
}
