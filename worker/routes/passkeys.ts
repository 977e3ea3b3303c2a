/**
 * Passkeys (WebAuthn): sign-up, sign-in, and adding or removing them while signed in (within 10
 * minutes of a real sign-in, else 401 `reauth_required`: `ensureRecentSignIn`). Challenges
 * are 32 random bytes, live 5 minutes in D1, work once, and are bound to their purpose (and, for
 * a signed-in registration, to the user). Sign-in uses discoverable credentials: no username.
 */
import {
  type AuthenticationResponseJSON,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from "@simplewebauthn/server";
import { isoBase64URL, isoUint8Array } from "@simplewebauthn/server/helpers";
import { type Context, Hono } from "hono";
import type { z } from "zod";
import {
  type authenticationResponseSchema,
  loginVerifyBodySchema,
  passkeyParamSchema,
  registerOptionsBodySchema,
  registerVerifyBodySchema,
} from "../../sdk/src/human/auth";
import { emptyBodySchema } from "../../sdk/src/human/common";
import {
  currentWeb,
  ensureRecentSignIn,
  requireRecentSignIn,
  requireSameOrigin,
  requireWeb,
  startWebSession,
} from "../auth";
import { newId } from "../crypto";
import {
  type ChallengeUse,
  consumeChallenge,
  createChallenge,
  findPasskey,
  listPasskeys,
  type NewPasskey,
  type PasskeyRow,
  recordPasskeyUse,
} from "../db";
import { DomainError } from "../errors";
import { relyingParty, validate } from "../http";
import { limitPerClient, RATE_LIMITS } from "../rate-limits";
import { addPasskey, removePasskey } from "../team/passkeys";
import { signUpWithPasskey, teamToSignInTo } from "../team/signup";
import type { AppEnv } from "../types";

const CHALLENGE_TTL_MS = 5 * 60 * 1000;
/** Anyone may ask for a challenge, and each is a D1 row: counted per client. */
const limitOptions = limitPerClient(RATE_LIMITS.passkeyOptionsPerClient);

/** One answer for every failure, so a caller learns nothing about which check failed. */
function passkeyFailed(): never {
  throw new DomainError("passkey_failed", "the passkey could not be verified; start again");
}

function logRejection(err: unknown): void {
  console.warn("passkey rejected:", err instanceof Error ? err.message : "unknown error");
}

/** Makes options around a fresh challenge, stores the challenge, answers `{challengeId, options}`. */
async function issueChallenge<T extends { challenge: string }>(
  c: Context<AppEnv>,
  purpose: "register" | "login",
  bound: Omit<ChallengeUse, "challenge">,
  makeOptions: (challenge: Uint8Array<ArrayBuffer>) => Promise<T>,
) {
  const options = await makeOptions(crypto.getRandomValues(new Uint8Array(32)));
  const id = newId("wch");
  await createChallenge(c.env.DB, {
    id,
    purpose,
    challenge: options.challenge,
    ...bound,
    now: Date.now(),
    ttlMs: CHALLENGE_TTL_MS,
  });
  return c.json({ challengeId: id, options });
}

function registrationOptions(
  c: Context<AppEnv>,
  user: { name: string; displayName: string; handle: Uint8Array<ArrayBuffer>; existing: PasskeyRow[] },
) {
  const { rpID } = relyingParty(c);
  return (challenge: Uint8Array<ArrayBuffer>) =>
    generateRegistrationOptions({
      rpName: "Tapgate",
      rpID,
      userName: user.name,
      userDisplayName: user.displayName,
      userID: user.handle,
      challenge,
      timeout: CHALLENGE_TTL_MS,
      attestationType: "none",
      excludeCredentials: user.existing.map(({ id, transports }) => ({ id, transports })),
      authenticatorSelection: { residentKey: "required", requireResidentKey: true, userVerification: "required" },
    });
}

async function verifiedRegistration(
  c: Context<AppEnv>,
  body: z.infer<typeof registerVerifyBodySchema>,
  expectedChallenge: string,
): Promise<NewPasskey | null> {
  const { rpID, origin } = relyingParty(c);
  try {
    const { verified, registrationInfo } = await verifyRegistrationResponse({
      response: body.response as RegistrationResponseJSON,
      expectedChallenge,
      expectedOrigin: origin,
      expectedRPID: rpID,
      requireUserVerification: true,
    });
    if (!verified) return null;
    const { credential } = registrationInfo;
    return {
      id: credential.id,
      publicKey: isoBase64URL.fromBuffer(credential.publicKey),
      counter: credential.counter,
      transports: credential.transports ?? [],
      deviceName: body.deviceName ?? null,
    };
  } catch (err) {
    logRejection(err);
    return null;
  }
}

/** The authenticator's new signature counter, or null when the assertion does not verify. */
async function verifiedAssertion(
  c: Context<AppEnv>,
  response: z.infer<typeof authenticationResponseSchema>,
  expectedChallenge: string,
  stored: PasskeyRow,
): Promise<number | null> {
  const { rpID, origin } = relyingParty(c);
  try {
    const { verified, authenticationInfo } = await verifyAuthenticationResponse({
      response: response as AuthenticationResponseJSON,
      expectedChallenge,
      expectedOrigin: origin,
      expectedRPID: rpID,
      credential: {
        id: stored.id,
        publicKey: isoBase64URL.toBuffer(stored.publicKey),
        counter: stored.counter,
        transports: stored.transports,
      },
      requireUserVerification: true,
    });
    return verified ? authenticationInfo.newCounter : null;
  } catch (err) {
    logRejection(err);
    return null;
  }
}

export const passkeyRoutes = new Hono<AppEnv>()
  .use("/v1/auth/passkey/*", requireSameOrigin)
  .use("/v1/auth/passkeys", requireWeb)
  .use("/v1/auth/passkeys/*", requireWeb, requireSameOrigin)
  .post("/v1/auth/passkey/register/options", validate("json", registerOptionsBodySchema), limitOptions, async (c) => {
    const signup = c.req.valid("json");
    if (signup) {
      // No exclude list: it would tell a stranger whether the address has passkeys.
      const handle = crypto.getRandomValues(new Uint8Array(16));
      const user = { name: signup.email, displayName: signup.name, handle, existing: [] };
      return issueChallenge(c, "register", { userId: null, signup }, registrationOptions(c, user));
    }
    const signedIn = await currentWeb(c);
    if (!signedIn) throw new DomainError("unauthenticated", "sign in first, or send {email, name, team} to sign up");
    const me = await ensureRecentSignIn(c.env.DB, signedIn);
    const user = {
      name: me.email,
      displayName: me.name,
      handle: isoUint8Array.fromUTF8String(me.userId),
      existing: await listPasskeys(c.env.DB, me.userId),
    };
    return issueChallenge(c, "register", { userId: me.userId, signup: null }, registrationOptions(c, user));
  })
  .post("/v1/auth/passkey/register/verify", validate("json", registerVerifyBodySchema), async (c) => {
    const body = c.req.valid("json");
    const me = await currentWeb(c);
    const now = Date.now();
    const use = await consumeChallenge(c.env.DB, {
      id: body.challengeId,
      purpose: "register",
      userId: me?.userId ?? null,
      now,
    });
    const passkey = use && (await verifiedRegistration(c, body, use.challenge));
    if (!use || !passkey) return passkeyFailed();
    if (use.signup) return signUpWithPasskey(c, use.signup, passkey);
    // consumeChallenge only hands a user's challenge to that user.
    if (!me) return passkeyFailed();
    await ensureRecentSignIn(c.env.DB, me);
    if (!(await addPasskey(c.env, { passkey, userId: me.userId, teamId: me.teamId, now }))) {
      return passkeyFailed();
    }
    return c.json({ id: passkey.id }, 201);
  })
  .post("/v1/auth/passkey/login/options", validate("json", emptyBodySchema), limitOptions, (c) => {
    const { rpID } = relyingParty(c);
    return issueChallenge(c, "login", { userId: null, signup: null }, (challenge) =>
      generateAuthenticationOptions({ rpID, challenge, timeout: CHALLENGE_TTL_MS, userVerification: "required" }),
    );
  })
  .post("/v1/auth/passkey/login/verify", validate("json", loginVerifyBodySchema), async (c) => {
    const { challengeId, response } = c.req.valid("json");
    const now = Date.now();
    // The challenge is spent first, so a failed attempt cannot be retried with it.
    const use = await consumeChallenge(c.env.DB, { id: challengeId, purpose: "login", userId: null, now });
    const stored = use && (await findPasskey(c.env.DB, response.id));
    const counter = use && stored && (await verifiedAssertion(c, response, use.challenge, stored));
    if (!stored || typeof counter !== "number") return passkeyFailed();
    const userId = await recordPasskeyUse(c.env.DB, { id: stored.id, counter, now });
    if (!userId) return passkeyFailed();
    await startWebSession(c, userId, await teamToSignInTo(c.env.DB, userId, now), "passkey");
    return c.json({ ok: true });
  })
  .get("/v1/auth/passkeys", async (c) => {
    const passkeys = await listPasskeys(c.env.DB, c.get("web").userId);
    return c.json({
      passkeys: passkeys.map(({ id, deviceName, createdAt, lastUsedAt }) => ({
        id,
        deviceName,
        createdAt,
        lastUsedAt,
      })),
    });
  })
  .delete("/v1/auth/passkeys/:id", requireRecentSignIn, validate("param", passkeyParamSchema), async (c) => {
    const w = c.get("web");
    const id = c.req.valid("param").id;
    await removePasskey(c.env, { teamId: w.teamId, userId: w.userId, credentialId: id });
    return c.json({ ok: true, id });
  });
