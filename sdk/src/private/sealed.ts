/**
 * A sealed request as the service holds it (docs/agent-protocol.md "Private requests"): the
 * ciphertext, each device's wrap of its key, and what routing needs. Kept apart from the
 * plaintext's shape (contract.ts) so that `approval.ts` can carry it without an import cycle.
 * Environment-neutral.
 */
import { z } from "zod";

/** How risky a request is, fixed when it opens (docs/state-machine.md "Risk tiers"). */
export const RISK_TIERS = ["normal", "high"] as const;
export const riskSchema = z.enum(RISK_TIERS);
export type Risk = z.infer<typeof riskSchema>;

/** `policy.privacy`: `private` teams get only sealed requests (docs/threat-model.md "Private mode"). */
export const PRIVACY_MODES = ["standard", "private"] as const;
export const privacySchema = z.enum(PRIVACY_MODES);
export type Privacy = z.infer<typeof privacySchema>;

/** The one suite: HPKE (RFC 9180) DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-256-GCM. */
export const SEALED_ALG = "HPKE-P256-SHA256-A256GCM" as const;

export const hex64 = z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters (SHA-256)");
export const base64url = (max: number) =>
  z
    .string()
    .max(max)
    .regex(/^[A-Za-z0-9_-]*$/, "must be base64url without padding");

/** A device key's id: `dk_` and the first 32 hex characters of SHA-256 over its raw public key. */
export const deviceIdSchema = z.string().regex(/^dk_[0-9a-f]{32}$/, "must be a device key id (dk_ and 32 hex)");

/** An uncompressed P-256 public key (65 bytes), base64url: 87 characters. */
export const devicePublicKeySchema = base64url(87).length(87, "must be a raw uncompressed P-256 key (65 bytes)");

/** The content key, HPKE-sealed to one device: `enc` (65 bytes) and the sealed 32-byte key (48 bytes). */
export const sealedWrapSchema = z.object({
  deviceId: deviceIdSchema,
  enc: base64url(87),
  key: base64url(64),
});
export type SealedWrap = z.infer<typeof sealedWrapSchema>;

/** The most recipient devices one request is sealed to. */
export const MAX_RECIPIENTS = 64;

/**
 * What the service holds of a private request's content, in `params._meta.tapgate.sealed` (and
 * the approval's `sealed`): the content encrypted once under a random key (AES-256-GCM), that key
 * sealed to each recipient device, and what routing needs. `requestHash` is SHA-256 hex of the
 * canonical JSON of the plaintext (`sealedPlaintextSchema`); a device checks it before showing
 * anything. `fingerprint`: the team-keyed rule fingerprint (fingerprint.ts), absent when the
 * agent has no rule key. `bytes`: the plaintext's UTF-8 size.
 */
export const sealedRequestSchema = z.object({
  v: z.literal(1),
  alg: z.literal(SEALED_ALG),
  requestHash: hex64,
  risk: riskSchema,
  bytes: z.number().int().nonnegative(),
  fingerprint: hex64.optional(),
  iv: base64url(16).length(16, "must be a 12-byte IV"),
  ciphertext: base64url(360_000),
  recipients: z.array(sealedWrapSchema).min(1).max(MAX_RECIPIENTS),
});
export type SealedRequest = z.infer<typeof sealedRequestSchema>;
