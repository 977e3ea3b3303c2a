/** Sign-up, sign-in by one-time email link, sign-out, and who am I. */
import { type Context, Hono } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import {
  devOutboxQuerySchema,
  linkBodySchema,
  type Me,
  signinBodySchema,
  signupBodySchema,
} from "../../sdk/src/human/auth";
import { endWebSession, requireSameOrigin, requireWeb, startWebSession } from "../auth";
import { newSecret, sha256Hex } from "../crypto";
import {
  addPasskey,
  consumeSignInLink,
  createSignInLink,
  createUserWithTeam,
  findUserByEmail,
  firstMembership,
  listDevMessages,
  type NewPasskey,
  type ParkedPasskey,
  type SignInLink,
  type SignupDetails,
} from "../db";
import { apiError, appOrigin, validate } from "../http";
import { afterAnswering, deliverMail } from "../mail";
import type { AppEnv } from "../types";

const LINK_TTL_MS = 15 * 60 * 1000;
/**
 * Set by a passkey sign-up: a nonce whose hash waits on the link with the passkey. Only the
 * browser that made the passkey can bring it into the account; a link confirmed anywhere else
 * makes the account without it, so a stranger cannot plant a passkey with someone else's address.
 */
const SIGNUP_BROWSER_COOKIE = "__Host-tapgate-signup";

export const authRoutes = new Hono<AppEnv>()
  .post("/v1/auth/signup", requireSameOrigin, validate("json", signupBodySchema), async (c) =>
    signUpByMail(c, c.req.valid("json"), null),
  )
  .post("/v1/auth/signin", requireSameOrigin, validate("json", signinBodySchema), async (c) => {
    const { email } = c.req.valid("json");
    await afterAnswering(c, async () => {
      if (await findUserByEmail(c.env.DB, email))
        await sendLink(c, { purpose: "signin", email, name: null, team_name: null });
    });
    return c.json({ ok: true, message: "if that address has an account, a link is on its way" }, 202);
  })
  .post("/v1/auth/link", requireSameOrigin, validate("json", linkBodySchema), async (c) => {
    const now = Date.now();
    const browser = getCookie(c, SIGNUP_BROWSER_COOKIE);
    const link = await consumeSignInLink(c.env.DB, sha256Hex(c.req.valid("json").token), now);
    if (!link) return apiError(c, "invalid_link", "this link is invalid, used or expired; ask for a new one");
    const user = await findUserByEmail(c.env.DB, link.email);
    const member = user ? await firstMembership(c.env.DB, user.id) : null;
    const signedIn =
      user && member
        ? { userId: user.id, teamId: member.teamId }
        : await createUserWithTeam(c.env.DB, {
            email: link.email,
            name: link.name ?? link.email.split("@")[0] ?? link.email,
            teamName: link.team_name ?? "My team",
            now,
          });
    // Only a link that created the account brings its passkey (never to an existing user), and
    // only when confirmed in the browser that made the passkey.
    const passkey = !user && browser ? parkedPasskeyFor(link.passkey, browser) : null;
    if (passkey) await addPasskey(c.env, { passkey, ...signedIn, now });
    await startWebSession(c, signedIn.userId, signedIn.teamId, "email_link");
    if (browser) deleteCookie(c, SIGNUP_BROWSER_COOKIE, { path: "/", secure: true });
    return c.json({ ok: true });
  })
  .post("/v1/auth/signout", requireSameOrigin, requireWeb, async (c) => {
    await endWebSession(c, c.get("web"));
    return c.json({ ok: true });
  })
  .get("/v1/me", requireWeb, (c) => {
    const w = c.get("web");
    return c.json({
      user: { id: w.userId, email: w.email, name: w.name },
      team: { id: w.teamId, name: w.teamName },
      role: w.role,
    } satisfies Me);
  })
  .get("/v1/dev/outbox", validate("query", devOutboxQuerySchema), async (c) => {
    if (!c.env.DEV_OUTBOX) return apiError(c, "not_found", "no such route");
    return c.json({ messages: await listDevMessages(c.env.DB, c.req.valid("query").to) });
  });

/**
 * Passkey sign-up: the passkey is parked on the mailed link until the address is proven, bound to
 * this browser by a cookie. The cookie is set whether or not the address is known, so the answer
 * is the same either way.
 */
export function signUpWithPasskey(c: Context<AppEnv>, details: SignupDetails, passkey: NewPasskey) {
  const browser = newSecret();
  setCookie(c, SIGNUP_BROWSER_COOKIE, browser.token, {
    path: "/",
    secure: true,
    httpOnly: true,
    sameSite: "Strict",
    maxAge: LINK_TTL_MS / 1000,
  });
  return signUpByMail(c, details, { ...passkey, browserHash: browser.hash });
}

/** The parked passkey, without its binding, if `browser` is the nonce of the browser that made it. */
function parkedPasskeyFor(parked: ParkedPasskey | null | undefined, browser: string): NewPasskey | null {
  if (!parked?.browserHash || parked.browserHash !== sha256Hex(browser)) return null;
  const { browserHash: _, ...passkey } = parked;
  return passkey;
}

/**
 * Sign-up, by email alone or with a parked passkey. An existing address gets a sign-in link
 * instead and the passkey is dropped; the answer is the same, so nothing leaks.
 */
async function signUpByMail(c: Context<AppEnv>, details: SignupDetails, passkey: ParkedPasskey | null) {
  const { email, name, team } = details;
  await afterAnswering(c, async () => {
    if (await findUserByEmail(c.env.DB, email))
      await sendLink(c, { purpose: "signin", email, name: null, team_name: null });
    else await sendLink(c, { purpose: "signup", email, name, team_name: team, passkey });
  });
  return c.json({ ok: true, message: "check your email for a link" }, 202);
}

async function sendLink(c: Context<AppEnv>, link: SignInLink) {
  const { token, hash } = newSecret();
  await createSignInLink(c.env.DB, { ...link, tokenHash: hash, now: Date.now(), ttlMs: LINK_TTL_MS });
  const url = `${appOrigin(c)}/signin?token=${token}`;
  const action = link.purpose === "signup" ? "finish creating your Tapgate team" : "sign in to Tapgate";
  const passkey = link.passkey
    ? "Open it in the browser where you created your passkey to add that passkey too; opened anywhere else, the account is made without it. "
    : "";
  await deliverMail(c, {
    to: link.email,
    subject: link.purpose === "signup" ? "Confirm your Tapgate sign-up" : "Your Tapgate sign-in link",
    text: `Open this link to ${action}. It works once, for 15 minutes:\n\n${url}\n\n${passkey}If you did not ask for it, ignore this message.`,
    link: url,
  });
}
