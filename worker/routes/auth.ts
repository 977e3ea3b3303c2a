/** Sign-up, sign-in by one-time email link, sign-out, and who am I. */
import { type Context, Hono } from "hono";
import { z } from "zod";
import { endWebSession, requireSameOrigin, requireWeb, startWebSession } from "../auth";
import { randomToken, sha256Hex } from "../crypto";
import {
  addPasskey,
  consumeSignInLink,
  createSignInLink,
  createUserWithTeam,
  findUserByEmail,
  firstMembership,
  listDevMessages,
  type NewPasskey,
  type SignInLink,
  type SignupDetails,
} from "../db";
import { apiError, appOrigin, validate } from "../http";
import { deliverMail } from "../mail";
import type { AppEnv } from "../types";

const LINK_TTL_MS = 15 * 60 * 1000;

const email = z
  .email()
  .max(254)
  .transform((e) => e.toLowerCase());
export const signupBody = z.object({
  email,
  name: z.string().trim().min(1).max(100),
  team: z.string().trim().min(1).max(100),
});
const signinBody = z.object({ email });
const linkBody = z.object({ token: z.string().min(20).max(100) });

export const authRoutes = new Hono<AppEnv>()
  .post("/v1/auth/signup", requireSameOrigin, validate("json", signupBody), async (c) =>
    signUpByMail(c, c.req.valid("json"), null),
  )
  .post("/v1/auth/signin", requireSameOrigin, validate("json", signinBody), async (c) => {
    const { email } = c.req.valid("json");
    if (await findUserByEmail(c.env.DB, email)) {
      await sendLink(c, { purpose: "signin", email, name: null, team_name: null });
    }
    return c.json({ ok: true, message: "if that address has an account, a link is on its way" }, 202);
  })
  .post("/v1/auth/link", requireSameOrigin, validate("json", linkBody), async (c) => {
    const now = Date.now();
    const link = await consumeSignInLink(c.env.DB, sha256Hex(c.req.valid("json").token), now);
    if (!link) return apiError(c, 400, "invalid_link", "this link is invalid, used or expired; ask for a new one");
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
    // Only a link that created the account brings its passkey: never attach one to an existing user.
    if (link.passkey && !user) await addPasskey(c.env.DB, { passkey: link.passkey, ...signedIn, now });
    await startWebSession(c, signedIn.userId, signedIn.teamId, "email_link");
    return c.json({ ok: true });
  })
  .post("/v1/auth/signout", requireSameOrigin, requireWeb, async (c) => {
    await endWebSession(c, c.get("web").tokenHash);
    return c.json({ ok: true });
  })
  .get("/v1/me", requireWeb, (c) => {
    const w = c.get("web");
    return c.json({
      user: { id: w.userId, email: w.email, name: w.name },
      team: { id: w.teamId, name: w.teamName },
      role: w.role,
    });
  })
  .get("/v1/dev/outbox", validate("query", z.object({ to: email.optional() })), async (c) => {
    if (!c.env.DEV_OUTBOX) return apiError(c, 404, "not_found", "no such route");
    return c.json({ messages: await listDevMessages(c.env.DB, c.req.valid("query").to) });
  })
  // Mail scanners fetch links: GET only shows a button; the POST behind it consumes the token.
  .get("/signin", (c) => c.html(CONFIRM_PAGE));

/**
 * Sign-up, by email alone or with a passkey made on the way (`passkey`, parked on the link until
 * it is confirmed, so the address is proven first). An existing address gets a sign-in link
 * instead and the passkey is dropped; the answer is the same, so nothing leaks.
 */
export async function signUpByMail(c: Context<AppEnv>, details: SignupDetails, passkey: NewPasskey | null) {
  const existing = await findUserByEmail(c.env.DB, details.email);
  const { email, name, team } = details;
  if (existing) await sendLink(c, { purpose: "signin", email, name: null, team_name: null });
  else await sendLink(c, { purpose: "signup", email, name, team_name: team, passkey });
  return c.json({ ok: true, message: "check your email for a link" }, 202);
}

async function sendLink(c: Context<AppEnv>, link: SignInLink) {
  const token = randomToken();
  await createSignInLink(c.env.DB, { ...link, tokenHash: sha256Hex(token), now: Date.now(), ttlMs: LINK_TTL_MS });
  const url = `${appOrigin(c)}/signin?token=${token}`;
  const action = link.purpose === "signup" ? "finish creating your Tapgate team" : "sign in to Tapgate";
  // Whoever confirms the link gets the passkey in their new account: say so, so nobody confirms a stranger's.
  const passkey = link.passkey ? "Confirming also adds the passkey that was created when signing up. " : "";
  await deliverMail(c, {
    to: link.email,
    subject: link.purpose === "signup" ? "Confirm your Tapgate sign-up" : "Your Tapgate sign-in link",
    text: `Open this link to ${action}. It works once, for 15 minutes:\n\n${url}\n\n${passkey}If you did not ask for it, ignore this message.`,
    link: url,
  });
}

const CONFIRM_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Sign in to Tapgate</title>
<style>body{font:16px system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem;color-scheme:light dark}
button{font:inherit;padding:.9rem 1.4rem;border-radius:.6rem;border:0;background:#2563eb;color:#fff;width:100%}</style>
</head><body><h1>Sign in to Tapgate</h1><p>Confirm to finish signing in on this device.</p>
<button id="go">Continue</button><p id="msg" role="status"></p>
<script>
const token = new URLSearchParams(location.search).get("token") || "";
document.getElementById("go").addEventListener("click", async () => {
  const r = await fetch("/v1/auth/link", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token }) });
  const body = await r.json().catch(() => ({}));
  if (r.ok) location.replace("/"); else document.getElementById("msg").textContent = body.message || "Sign-in failed.";
});
</script></body></html>`;
