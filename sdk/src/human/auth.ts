/** Sign-up, sign-in by one-time link, passkeys, pairing, sign-out, and who am I. */
import { z } from "zod";
import { roleSchema } from "./roles.js";

const email = z
  .email()
  .max(254)
  .transform((e) => e.toLowerCase());

/** `POST /v1/auth/signup` (and a passkey sign-up's options). */
export const signupBodySchema = z.object({
  email,
  name: z.string().trim().min(1).max(100),
  team: z.string().trim().min(1).max(100),
});
export type SignupBody = z.input<typeof signupBodySchema>;
/** A sign-up as read: the address lower-cased, the names trimmed. */
export type Signup = z.output<typeof signupBodySchema>;
/** `POST /v1/auth/signin`. */
export const signinBodySchema = z.object({ email });
const linkToken = z.string().min(20).max(100);
/**
 * `POST /v1/auth/link`: the token from the mailed link. A browser signed in as someone else must
 * send `confirm: true` (else `409 signed_in_as_other`): nobody is switched accounts unasked.
 */
export const linkBodySchema = z.object({ token: linkToken, confirm: z.boolean().optional() });
/** `POST /v1/auth/link/preview {token}`: whom a link signs in, without using it up (a body: URLs are logged). */
export const linkPreviewBodySchema = z.object({ token: linkToken });
export const linkPreviewSchema = z.object({ email: z.string(), purpose: z.enum(["signup", "signin"]) });
export type LinkPreview = z.infer<typeof linkPreviewSchema>;

/**
 * The extra fields of `409 signed_in_as_other` (`POST /v1/auth/link`, `POST /v1/pairing/claim`):
 * whom the link or pairing signs in, and who this browser is signed in as now.
 */
const accountSchema = z.object({ email: z.string(), name: z.string().nullable() });
export const signedInAsOtherSchema = z.object({ account: accountSchema, signedInAs: accountSchema });
export type SignedInAsOther = z.infer<typeof signedInAsOtherSchema>;
/**
 * The extra field of `409 confirm_required` (`POST /v1/pairing/claim` without `confirm: true`):
 * whom the pairing signs this browser in as, for the page to name before the tap.
 */
export const confirmRequiredSchema = z.object({ account: accountSchema });
export type ConfirmRequired = z.infer<typeof confirmRequiredSchema>;
/** `GET /v1/dev/outbox?to` (local mode only). */
export const devOutboxQuerySchema = z.object({ to: email.optional() });

/** Sign-up and sign-in answer 202 whether or not the address is known. */
export const mailSentAnswerSchema = z.object({ ok: z.literal(true), message: z.string() });

/** `GET /v1/me`. */
export const meSchema = z.object({
  user: z.object({ id: z.string(), email: z.string(), name: z.string() }),
  team: z.object({ id: z.string(), name: z.string() }),
  role: roleSchema,
});
export type Me = z.infer<typeof meSchema>;

// ── web sessions (signed-in browsers) ──────────────────────────────────────

/** `DELETE /v1/auth/sessions/:id`: a session's public id (never its token). */
export const webSessionParamSchema = z.object({ id: z.string().regex(/^wss_[0-9A-Za-z]{22,24}$/, "not a session id") });
/** One signed-in browser of mine. */
export const webSessionInfoSchema = z.object({
  id: z.string(),
  /** The browser's User-Agent when it signed in, if it sent one. */
  device: z.string().nullable(),
  /** How it signed in last: email_link, passkey, pairing. */
  method: z.string(),
  createdAt: z.number(),
  lastSeenAt: z.number(),
  /** This browser. */
  current: z.boolean(),
});
export type WebSessionInfo = z.infer<typeof webSessionInfoSchema>;
/** `GET /v1/auth/sessions`. */
export const webSessionListSchema = z.object({ sessions: z.array(webSessionInfoSchema) });
/** `POST /v1/auth/sessions/end-others`: how many sessions ended. */
export const endedSessionsSchema = z.object({ ok: z.literal(true), ended: z.number() });

// ── passkeys (WebAuthn) ─────────────────────────────────────────────────────

const base64url = (max: number) =>
  z
    .string()
    .max(max)
    .regex(/^[A-Za-z0-9_-]*$/, "not base64url");
/** WebAuthn caps credential ids at 1023 bytes. */
export const credentialIdSchema = base64url(1364).min(1);

// The library checks every field it reads; these bound sizes and shapes before it does.
const credentialFields = {
  id: credentialIdSchema,
  rawId: credentialIdSchema,
  type: z.literal("public-key"),
  clientExtensionResults: z.record(z.string(), z.unknown()),
  authenticatorAttachment: z.enum(["platform", "cross-platform"]).optional(),
};
export const registrationResponseSchema = z.object({
  ...credentialFields,
  response: z.object({
    clientDataJSON: base64url(8192),
    attestationObject: base64url(65536),
    authenticatorData: base64url(65536).optional(),
    publicKey: base64url(8192).optional(),
    publicKeyAlgorithm: z.number().int().optional(),
    transports: z.array(z.string().max(32)).max(16).optional(),
  }),
});
export const authenticationResponseSchema = z.object({
  ...credentialFields,
  response: z.object({
    clientDataJSON: base64url(8192),
    authenticatorData: base64url(65536),
    signature: base64url(8192),
    userHandle: base64url(128).optional(),
  }),
});

/** `POST /v1/auth/passkey/register/options`: `{}` adds a passkey to me (null); sign-up details start a passkey sign-up. */
export const registerOptionsBodySchema = z.union([signupBodySchema, z.strictObject({}).transform(() => null)]);
const challengeId = z.string().regex(/^wch_[0-9A-Za-z]{22}$/, "not a challenge id");
/** `POST /v1/auth/passkey/register/verify`. */
export const registerVerifyBodySchema = z.object({
  challengeId,
  response: registrationResponseSchema,
  deviceName: z.string().trim().min(1).max(100).optional(),
});
/** Its answer: the new passkey's id (201), or, for a passkey sign-up, the mailed link's answer (202). */
export const passkeyRegisteredSchema = z.union([
  z.object({ id: z.string() }),
  z.object({ ok: z.literal(true), message: z.string() }),
]);
/** `POST /v1/auth/passkey/login/verify`. */
export const loginVerifyBodySchema = z.object({ challengeId, response: authenticationResponseSchema });

/** `…/options` answers: the challenge's id and the WebAuthn options (typed by the WebAuthn library). */
export const challengeAnswerSchema = z.object({
  challengeId: z.string(),
  options: z.looseObject({ challenge: z.string() }),
});

/** `DELETE /v1/auth/passkeys/:id`. */
export const passkeyParamSchema = z.object({ id: credentialIdSchema });

/** `GET /v1/auth/passkeys`. */
export const passkeyListSchema = z.object({
  passkeys: z.array(
    z.object({
      id: z.string(),
      deviceName: z.string().nullable(),
      createdAt: z.number(),
      lastUsedAt: z.number().nullable(),
    }),
  ),
});

// ── pairing ("add a phone") ─────────────────────────────────────────────────

/** `POST /v1/pairing`. */
export const pairingAnswerSchema = z.object({ url: z.string(), expiresAt: z.number() });
/** `POST /v1/pairing/claim`. */
export const pairingClaimBodySchema = z.object({
  token: z.string().regex(/^[A-Za-z0-9_-]{43}$/, "not a pairing token"),
  /**
   * The person's tap, always needed: without it the answer is `409 confirm_required` naming the
   * account (or `409 signed_in_as_other` in a browser signed in as someone else), the token unused.
   */
  confirm: z.boolean().optional(),
});
