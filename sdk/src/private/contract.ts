/**
 * Private mode's wire contract (docs/agent-protocol.md "Private requests", docs/human-api.md
 * "Device keys"), defined once: what a sealed request carries to the service, what its sealed
 * plaintext is, a device key and its passkey endorsement, and the recipients an agent seals to.
 * The Worker validates with these schemas, the SDK and the PWA build and read them.
 *
 * Owns: shapes and constants. Does not own: the cryptography (envelope.ts, fingerprint.ts,
 * device-key.ts) or where a sealed request is stored (the Worker).
 * Environment-neutral: no Node and no Workers APIs here.
 */
import { z } from "zod";
import { approvalSnapshotSchema } from "../approval.js";
import { base64url, deviceIdSchema, devicePublicKeySchema, hex64, privacySchema } from "./sealed.js";

export * from "./sealed.js";

/** An option as the plaintext carries it: the agent's own name for it (the service sees a generic one). */
export const sealedOptionSchema = z.object({ optionId: z.string(), name: z.string(), kind: z.string() });

/**
 * What is sealed: the snapshot the card shows (the agent's tool call, its session as the SDK knows
 * it, `_meta`, a v2 request's fields, an elicitation's question), the options with their names,
 * and the rule fingerprint (so a device can see the service did not swap it). Never cut.
 */
export const sealedPlaintextSchema = z.object({
  v: z.literal(1),
  snapshot: approvalSnapshotSchema.omit({ truncated: true }),
  options: z.array(sealedOptionSchema),
  fingerprint: hex64.optional(),
});
export type SealedPlaintext = z.infer<typeof sealedPlaintextSchema>;

/** What the service shows and stores instead of a private request's tool call. */
export const SEALED_TOOL_CALL_ID = "private";

/**
 * A sealed `elicitation/create` on the wire: always `mode: "form"` with this `message` and an
 * empty `requestedSchema` (`{type: "object", properties: {}}`); the real question (its mode, text,
 * form or URL) is in the sealed plaintext's `snapshot.elicitation`.
 */
export const SEALED_ELICITATION_MESSAGE = "A private question: open Tapgate to read it";

/** The option names the service sees for a sealed request: by kind, never the agent's words. */
export const SEALED_OPTION_NAMES: Record<string, string> = {
  allow_once: "Allow once",
  allow_always: "Always allow",
  reject_once: "Deny",
  reject_always: "Always deny",
};
export const sealedOptionName = (kind: string): string => SEALED_OPTION_NAMES[kind] ?? "Other";

/**
 * A passkey assertion of a person over a device key (`deviceKeyChallenge`), as WebAuthn returned
 * it, with the credential's COSE public key, so an agent can check it offline against the passkey
 * it pinned for that person. All base64url.
 */
export const deviceKeyEndorsementSchema = z.object({
  credentialId: base64url(1366),
  /** The passkey's COSE public key, as registered. */
  credentialPublicKey: base64url(2048),
  authenticatorData: base64url(4096),
  clientDataJSON: base64url(4096),
  signature: base64url(1024),
});
export type DeviceKeyEndorsement = z.infer<typeof deviceKeyEndorsementSchema>;

/** One device an agent seals to (`GET /v1/agent/recipients`). */
export const recipientSchema = z.object({
  userId: z.string(),
  name: z.string(),
  deviceId: deviceIdSchema,
  publicKey: devicePublicKeySchema,
  endorsement: deviceKeyEndorsementSchema,
});
export type Recipient = z.infer<typeof recipientSchema>;

/**
 * `GET /v1/agent/recipients` (agent key): the team's privacy, the devices of people who may
 * decide its requests, and what sealing needs besides: the WebAuthn relying party the
 * endorsements were made for, and the high-risk patterns the SDK computes the tier with.
 */
export const recipientsResponseSchema = z.object({
  teamId: z.string(),
  privacy: privacySchema,
  rpId: z.string(),
  origin: z.string(),
  highRisk: z.array(z.unknown()),
  recipients: z.array(recipientSchema),
});
export type RecipientsResponse = z.infer<typeof recipientsResponseSchema>;

/** A device key as the human API lists it (`GET /v1/devices/keys`). */
export const deviceKeySchema = z.object({
  deviceId: deviceIdSchema,
  userId: z.string(),
  /** The person's name for the browser ("Ada's phone"). */
  name: z.string(),
  createdAt: z.number(),
  /** The push device registered from the same browser, when there is one (removing it removes the key). */
  pushDeviceId: z.string().nullable(),
  /** This key is the calling browser's sign-in's. */
  current: z.boolean(),
});
export type DeviceKey = z.infer<typeof deviceKeySchema>;

/** `POST /v1/devices/keys/options`: the key to endorse. */
export const deviceKeyOptionsBodySchema = z.object({ publicKey: devicePublicKeySchema });

/** `POST /v1/devices/keys`: the key, its name, and the passkey assertion over `deviceKeyChallenge`. */
export const deviceKeyRegisterBodySchema = z.object({
  publicKey: devicePublicKeySchema,
  name: z.string().trim().min(1).max(64),
  pushDeviceId: z.string().max(64).optional(),
  /** `AuthenticationResponseJSON` from `@simplewebauthn/browser`'s `startAuthentication`. */
  assertion: z.looseObject({
    id: z.string(),
    rawId: z.string(),
    type: z.literal("public-key"),
    response: z.looseObject({
      authenticatorData: z.string(),
      clientDataJSON: z.string(),
      signature: z.string(),
      userHandle: z.string().optional(),
    }),
  }),
});
