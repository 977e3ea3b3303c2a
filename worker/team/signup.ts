/**
 * Sign-up and sign-in by mailed link, with or without a passkey made at sign-up. Used by the
 * email routes (`routes/auth.ts`) and the passkey routes (`routes/passkeys.ts`). It takes the
 * request's context because a passkey sign-up is bound to its browser by a cookie and because
 * mail is sent after answering (so timing tells nothing).
 *
 * Owns: which link is sent to whom, the browser binding of a parked passkey, confirming a link
 * into a signed-in account. Does not own: the SQL (`db/people.ts`), the web session cookie
 * (`auth.ts`), mail transport (`mail.ts`), WebAuthn (`routes/passkeys.ts`).
 */
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { currentWeb, startWebSession } from "../auth";
import { newSecret, sha256Hex } from "../crypto";
import {
  consumeSignInLink,
  createSignInLink,
  createTeam,
  createUserWithTeam,
  findSignInLink,
  findUserByEmail,
  firstMembership,
  type NewPasskey,
  type ParkedPasskey,
  type SignInLink,
  type SignupDetails,
} from "../db";
import { DomainError } from "../errors";
import { appOrigin } from "../http";
import { afterAnswering, deliverMail } from "../mail";
import { limitMail } from "../rate-limits";
import type { AppEnv, Env } from "../types";
import { addPasskey } from "./passkeys";
import { refuseUnaskedSwitch } from "./switch-account";

const LINK_TTL_MS = 15 * 60 * 1000;
/**
 * Set by a passkey sign-up: a nonce whose hash waits on the link with the passkey. Only the
 * browser that made the passkey can bring it into the account; a link confirmed anywhere else
 * makes the account without it, so a stranger cannot plant a passkey with someone else's address.
 */
const SIGNUP_BROWSER_COOKIE = "__Host-tapgate-signup";

/**
 * Sign-up, by email alone or with a parked passkey. An existing address gets a sign-in link
 * instead and the passkey is dropped; the answer is the same, so nothing leaks. Both are counted
 * by the mail rate limits before the address is looked up, so a 429 leaks nothing either.
 */
export async function signUpByMail(c: Context<AppEnv>, details: SignupDetails, passkey: ParkedPasskey | null) {
  const { email, name, team } = details;
  await limitMail(c, email);
  await afterAnswering(c, async () => {
    if (await findUserByEmail(c.env.DB, email))
      await sendLink(c, { purpose: "signin", email, name: null, team_name: null });
    else await sendLink(c, { purpose: "signup", email, name, team_name: team, passkey });
  });
  return c.json({ ok: true, message: "check your email for a link" }, 202);
}

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

/** Sign-in by mail: a link only if the address has an account; the answer is the same either way. */
export async function signInByMail(c: Context<AppEnv>, email: string) {
  await limitMail(c, email);
  await afterAnswering(c, async () => {
    if (await findUserByEmail(c.env.DB, email))
      await sendLink(c, { purpose: "signin", email, name: null, team_name: null });
  });
  return c.json({ ok: true, message: "if that address has an account, a link is on its way" }, 202);
}

/** Whom a mailed link signs in, for its page to say before it is used (400 `invalid_link` otherwise). */
export async function previewLink(env: Env, token: string) {
  const link = await findSignInLink(env.DB, sha256Hex(token), Date.now());
  if (!link) throw invalidLink();
  return { email: link.email, purpose: link.purpose };
}

const invalidLink = () => new DomainError("invalid_link", "this link is invalid, used or expired; ask for a new one");

/**
 * Confirms a mailed link: signs its address in, making the account and its team first for a
 * sign-up link (400 `invalid_link` for a link that is unknown, used or expired). A browser signed
 * in as another account needs `confirm` (409 `signed_in_as_other`, the link still unused).
 */
export async function confirmLink(
  c: Context<AppEnv>,
  { token, confirm = false }: { token: string; confirm?: boolean },
) {
  const now = Date.now();
  const browser = getCookie(c, SIGNUP_BROWSER_COOKIE);
  const current = await currentWeb(c);
  const pending = current && !confirm ? await findSignInLink(c.env.DB, sha256Hex(token), now) : null;
  if (pending) refuseUnaskedSwitch(current, { userId: null, email: pending.email, name: pending.name }, confirm);
  const link = await consumeSignInLink(c.env.DB, sha256Hex(token), now);
  if (!link) throw invalidLink();
  const user = await findUserByEmail(c.env.DB, link.email);
  const signedIn = user
    ? { userId: user.id, teamId: await teamToSignInTo(c.env.DB, user.id, now) }
    : await createUserWithTeam(c.env.DB, {
        email: link.email,
        name: link.name ?? link.email.split("@")[0] ?? link.email,
        teamName: link.team_name ?? DEFAULT_TEAM_NAME,
        now,
      });
  // Only a link that created the account brings its passkey (never to an existing user), and
  // only when confirmed in the browser that made the passkey.
  const passkey = !user && browser ? parkedPasskeyFor(link.passkey, browser) : null;
  if (passkey) await addPasskey(c.env, { passkey, ...signedIn, now });
  await startWebSession(c, signedIn.userId, signedIn.teamId, "email_link");
  if (browser) deleteCookie(c, SIGNUP_BROWSER_COOKIE, { path: "/", secure: true });
}

const DEFAULT_TEAM_NAME = "My team";

/**
 * The team a person signs in to: the first they joined, or, for someone removed from their last
 * team, a new one of their own (a web session always has a team, so the ceiling on teams a
 * person makes does not apply here; the team counts toward it).
 */
export async function teamToSignInTo(db: D1Database, userId: string, now: number): Promise<string> {
  const member = await firstMembership(db, userId);
  if (member) return member.teamId;
  const teamId = await createTeam(db, { userId, name: DEFAULT_TEAM_NAME, now, ceiling: Number.MAX_SAFE_INTEGER });
  if (!teamId) throw new Error("a team with no ceiling was not made");
  return teamId;
}

/** The parked passkey, without its binding, if `browser` is the nonce of the browser that made it. */
function parkedPasskeyFor(parked: ParkedPasskey | null | undefined, browser: string): NewPasskey | null {
  if (!parked?.browserHash || parked.browserHash !== sha256Hex(browser)) return null;
  const { browserHash: _, ...passkey } = parked;
  return passkey;
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
