import { env } from "cloudflare:test";
import type {
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
} from "@simplewebauthn/server";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../worker/crypto";
import { SoftAuthenticator, type Tweaks } from "./authenticator";
import {
  api,
  confirmLink,
  cookieOf,
  json,
  lastMailLink,
  type Member,
  outbox,
  signUp,
  tokenOf,
  unique,
} from "./helpers";

const post = (path: string, body: unknown, init: RequestInit & { cookie?: string } = {}) =>
  api(path, { method: "POST", body: JSON.stringify(body), ...init });

interface Options<T> {
  challengeId: string;
  options: T;
}

async function registerOptions(body: object, cookie?: string) {
  const response = await post("/v1/auth/passkey/register/options", body, { cookie });
  expect(response.status).toBe(200);
  return json<Options<PublicKeyCredentialCreationOptionsJSON>>(response);
}

/**
 * Passkey sign-up up to the mailed link: options, the authenticator, verify. `browser` is the
 * cookie the sign-up browser got, which it shows again when it confirms the link.
 */
async function passkeySignUp(authenticator: SoftAuthenticator, email = `${unique("pk")}@example.com`) {
  const { challengeId, options } = await registerOptions({ email, name: "Pat", team: "Phones" });
  const response = await authenticator.register(options);
  const verify = await post("/v1/auth/passkey/register/verify", { challengeId, response, deviceName: "Pixel 8" });
  return { email, verify, browser: cookieOf(verify) };
}

/** Confirms a mailed link from a browser holding `cookie` (the passkey sign-up's, or none). */
const confirmIn = (link: string, cookie?: string) => post("/v1/auth/link", { token: tokenOf(link) }, { cookie });

/** A new account made with a passkey, confirmed by its link; the authenticator holds its passkey. */
async function passkeyMember(): Promise<{ member: Member; authenticator: SoftAuthenticator }> {
  const authenticator = await SoftAuthenticator.create();
  const { email, verify, browser } = await passkeySignUp(authenticator);
  expect(verify.status).toBe(202);
  const confirmed = await confirmIn(await lastMailLink(email), browser);
  expect(confirmed.status).toBe(200);
  const cookie = cookieOf(confirmed);
  const me = await json<{ user: { id: string }; team: { id: string } }>(await api("/v1/me", { cookie }));
  return { member: { cookie, email, userId: me.user.id, teamId: me.team.id }, authenticator };
}

async function loginOptions() {
  const response = await post("/v1/auth/passkey/login/options", {});
  expect(response.status).toBe(200);
  return json<Options<PublicKeyCredentialRequestOptionsJSON>>(response);
}

async function signInWith(authenticator: SoftAuthenticator, tweaks: Tweaks = {}) {
  const { challengeId, options } = await loginOptions();
  return post("/v1/auth/passkey/login/verify", { challengeId, response: await authenticator.assert(options, tweaks) });
}

async function addPasskeyTo(member: Member, authenticator: SoftAuthenticator, tweaks: Tweaks = {}) {
  const { challengeId, options } = await registerOptions({}, member.cookie);
  const response = await authenticator.register(options, tweaks);
  return post(
    "/v1/auth/passkey/register/verify",
    { challengeId, response, deviceName: "Laptop" },
    { cookie: member.cookie },
  );
}

async function expectPasskeyFailed(response: Response) {
  expect(response.status).toBe(400);
  expect(await json(response)).toMatchObject({ error: "passkey_failed" });
}

const storedPasskeys = async (userId: string) =>
  (await env.DB.prepare("SELECT id FROM passkey_credentials WHERE user_id = ?").bind(userId).all()).results;

describe("passkey sign-up and sign-in", () => {
  it("signs up with a passkey: 202, the link creates the account, and the passkey then signs in without a cookie", async () => {
    const authenticator = await SoftAuthenticator.create();
    const { email, verify, browser } = await passkeySignUp(authenticator);
    expect(verify.status).toBe(202);
    const emailSignup = await post("/v1/auth/signup", { email: `${unique("x")}@example.com`, name: "X", team: "T" });
    expect(await json(verify)).toEqual(await json(emailSignup));
    // Nothing is usable until the address is proven.
    await expectPasskeyFailed(await signInWith(authenticator));

    const confirmed = await confirmIn(await lastMailLink(email), browser);
    expect(confirmed.status).toBe(200);
    const signedUp = await json<{ user: { id: string }; team: { id: string } }>(
      await api("/v1/me", { cookie: cookieOf(confirmed) }),
    );
    expect(await storedPasskeys(signedUp.user.id)).toEqual([{ id: authenticator.id }]);

    const signedIn = await signInWith(authenticator);
    expect(signedIn.status).toBe(200);
    expect(signedIn.headers.get("Set-Cookie")).toMatch(/^__Host-tapgate=.*HttpOnly/);
    const me = await api("/v1/me", { cookie: cookieOf(signedIn) });
    expect(await json(me)).toMatchObject({ user: { id: signedUp.user.id, email }, team: { id: signedUp.team.id } });
    const session = await env.DB.prepare("SELECT method FROM web_sessions WHERE user_id = ? ORDER BY created_at DESC")
      .bind(signedUp.user.id)
      .first();
    expect(session?.method).toBe("passkey");
    const used = await env.DB.prepare("SELECT counter, last_used_at FROM passkey_credentials WHERE id = ?")
      .bind(authenticator.id)
      .first<{ counter: number; last_used_at: number | null }>();
    expect(used).toMatchObject({ counter: authenticator.signCount });
    expect(used?.last_used_at).toBeGreaterThan(0);
  });

  it("asks for a discoverable credential and user verification, with 32-byte challenges", async () => {
    const { options: registration } = await registerOptions({
      email: `${unique("opt")}@example.com`,
      name: "O",
      team: "T",
    });
    expect(registration.rp.id).toBe("tapgate.test");
    expect(registration.authenticatorSelection).toMatchObject({
      residentKey: "required",
      userVerification: "required",
    });
    expect(registration.excludeCredentials).toEqual([]);
    expect(Buffer.from(registration.challenge, "base64url")).toHaveLength(32);
    const { options: login } = await loginOptions();
    expect(login).toMatchObject({ rpId: "tapgate.test", userVerification: "required" });
    expect(login.allowCredentials ?? []).toEqual([]);
    expect(Buffer.from(login.challenge, "base64url")).toHaveLength(32);
  });

  it("a challenge works once", async () => {
    const { authenticator } = await passkeyMember();
    const { challengeId, options } = await loginOptions();
    const first = await post("/v1/auth/passkey/login/verify", {
      challengeId,
      response: await authenticator.assert(options),
    });
    expect(first.status).toBe(200);
    const again = await post("/v1/auth/passkey/login/verify", {
      challengeId,
      response: await authenticator.assert(options),
    });
    await expectPasskeyFailed(again);
    expect(again.headers.get("Set-Cookie")).toBeNull();
  });

  it("a failed attempt spends its challenge too", async () => {
    const { authenticator } = await passkeyMember();
    const { challengeId, options } = await loginOptions();
    const bad = await authenticator.assert(options, { origin: "https://evil.example" });
    await expectPasskeyFailed(await post("/v1/auth/passkey/login/verify", { challengeId, response: bad }));
    const good = await authenticator.assert(options);
    await expectPasskeyFailed(await post("/v1/auth/passkey/login/verify", { challengeId, response: good }));
  });

  it("an expired challenge fails", async () => {
    const { authenticator } = await passkeyMember();
    const { challengeId, options } = await loginOptions();
    await env.DB.prepare("UPDATE webauthn_challenges SET expires_at = ? WHERE id = ?")
      .bind(Date.now() - 1, challengeId)
      .run();
    const response = await authenticator.assert(options);
    await expectPasskeyFailed(await post("/v1/auth/passkey/login/verify", { challengeId, response }));
  });

  it("a challenge made for registration cannot sign in", async () => {
    const { member, authenticator } = await passkeyMember();
    const { challengeId, options } = await registerOptions({}, member.cookie);
    const response = await authenticator.assert({ challenge: options.challenge, rpId: options.rp.id });
    await expectPasskeyFailed(await post("/v1/auth/passkey/login/verify", { challengeId, response }));
  });

  it("a wrong origin in clientDataJSON fails, at sign-up and at sign-in", async () => {
    const stranger = await SoftAuthenticator.create();
    const email = `${unique("origin")}@example.com`;
    const { challengeId, options } = await registerOptions({ email, name: "O", team: "T" });
    const response = await stranger.register(options, { origin: "https://tapgate.test.evil.example" });
    await expectPasskeyFailed(await post("/v1/auth/passkey/register/verify", { challengeId, response }));
    const { messages } = await json<{ messages: unknown[] }>(await outbox(email));
    expect(messages).toEqual([]);

    const { authenticator } = await passkeyMember();
    await expectPasskeyFailed(await signInWith(authenticator, { origin: "https://evil.example" }));
  });

  it("without user verification, registration and sign-in fail", async () => {
    const { member, authenticator } = await passkeyMember();
    await expectPasskeyFailed(await signInWith(authenticator, { userVerified: false }));
    await expectPasskeyFailed(await addPasskeyTo(member, await SoftAuthenticator.create(), { userVerified: false }));
    expect(await storedPasskeys(member.userId)).toHaveLength(1);
  });

  it("an unknown passkey fails with the same answer", async () => {
    await expectPasskeyFailed(await signInWith(await SoftAuthenticator.create()));
  });

  it("rejects a counter that went backwards", async () => {
    const { authenticator } = await passkeyMember();
    expect((await signInWith(authenticator, { signCount: 5 })).status).toBe(200);
    await expectPasskeyFailed(await signInWith(authenticator, { signCount: 5 }));
    await expectPasskeyFailed(await signInWith(authenticator, { signCount: 3 }));
    await expectPasskeyFailed(await signInWith(authenticator, { signCount: 0 }));
    expect((await signInWith(authenticator, { signCount: 6 })).status).toBe(200);
  });

  it("two sign-ins racing with one counter value: only one gets a session", async () => {
    const { authenticator } = await passkeyMember();
    const challenges = await Promise.all([loginOptions(), loginOptions()]);
    const attempts = await Promise.all(
      challenges.map(async ({ challengeId, options }) =>
        post("/v1/auth/passkey/login/verify", {
          challengeId,
          response: await authenticator.assert(options, { signCount: 7 }),
        }),
      ),
    );
    expect(attempts.map((r) => r.status).sort()).toEqual([200, 400]);
  });

  it("signing up with a known address: the same 202, a sign-in link, no second account, no passkey stored", async () => {
    const known = await signUp("Known");
    const authenticator = await SoftAuthenticator.create();
    const { verify } = await passkeySignUp(authenticator, known.email);
    expect(verify.status).toBe(202);
    expect(await json(verify)).toMatchObject({ ok: true });
    const { messages } = await json<{ messages: Array<{ subject: string }> }>(await outbox(known.email));
    expect(messages.at(-1)?.subject).toBe("Your Tapgate sign-in link");
    const signedIn = await confirmLink(await lastMailLink(known.email));
    const me = await json<{ user: { id: string }; team: { id: string } }>(
      await api("/v1/me", { cookie: cookieOf(signedIn) }),
    );
    expect(me).toMatchObject({ user: { id: known.userId }, team: { id: known.teamId } });
    const users = await env.DB.prepare("SELECT COUNT(*) AS n FROM users WHERE email = ?").bind(known.email).first();
    expect(users?.n).toBe(1);
    const credential = await env.DB.prepare("SELECT id FROM passkey_credentials WHERE id = ?")
      .bind(authenticator.id)
      .first();
    expect(credential).toBeNull();
    await expectPasskeyFailed(await signInWith(authenticator));
  });

  it("a parked passkey never joins an account that appeared before its link was confirmed", async () => {
    const authenticator = await SoftAuthenticator.create();
    const { email, verify, browser } = await passkeySignUp(authenticator);
    expect(verify.status).toBe(202);
    const parkedLink = await lastMailLink(email);
    const other = await post("/v1/auth/signup", { email, name: "First", team: "T" });
    expect(other.status).toBe(202);
    expect((await confirmLink(await lastMailLink(email))).status).toBe(200);
    expect((await confirmIn(parkedLink, browser)).status).toBe(200);
    await expectPasskeyFailed(await signInWith(authenticator));
  });

  it("binds the parked passkey to the sign-up browser: a short-lived __Host- cookie, only its hash stored", async () => {
    const authenticator = await SoftAuthenticator.create();
    const { email, verify, browser } = await passkeySignUp(authenticator);
    expect(verify.headers.get("Set-Cookie")).toMatch(
      /^__Host-tapgate-signup=[A-Za-z0-9_-]{43}; Max-Age=900; Path=\/; HttpOnly; Secure; SameSite=Strict$/,
    );
    const nonce = browser.split("=")[1] ?? "";
    const link = await lastMailLink(email);
    const row = await env.DB.prepare("SELECT passkey FROM sign_in_links WHERE token_hash = ?")
      .bind(sha256Hex(tokenOf(link)))
      .first<{ passkey: string }>();
    expect(JSON.parse(row?.passkey ?? "{}")).toMatchObject({ id: authenticator.id, browserHash: sha256Hex(nonce) });
    expect(row?.passkey).not.toContain(nonce);
    // A known address gets the same cookie, so the answers stay alike.
    const known = await signUp("Known");
    const again = await passkeySignUp(await SoftAuthenticator.create(), known.email);
    expect(again.browser).toMatch(/^__Host-tapgate-signup=[A-Za-z0-9_-]{43}$/);

    const confirmed = await confirmIn(link, browser);
    expect(confirmed.status).toBe(200);
    // The session cookie first (it is what signs in), then the spent binding is cleared.
    expect(confirmed.headers.get("Set-Cookie")).toMatch(/^__Host-tapgate=.*, __Host-tapgate-signup=; Max-Age=0;/);
  });

  it("someone else's passkey sign-up with my address: confirming my mail makes my account without their passkey", async () => {
    const strangers = await SoftAuthenticator.create();
    const { email, verify } = await passkeySignUp(strangers);
    expect(verify.status).toBe(202);
    // I open the link from my own mailbox: a browser without the stranger's cookie.
    const confirmed = await confirmIn(await lastMailLink(email));
    expect(confirmed.status).toBe(200);
    const me = await json<{ user: { id: string; email: string } }>(
      await api("/v1/me", { cookie: cookieOf(confirmed) }),
    );
    expect(me.user.email).toBe(email);
    expect(await storedPasskeys(me.user.id)).toEqual([]);
    await expectPasskeyFailed(await signInWith(strangers));
  });

  it("another passkey sign-up's cookie does not bring a parked passkey either", async () => {
    const strangers = await SoftAuthenticator.create();
    const { email } = await passkeySignUp(strangers);
    // The stranger's cookie from a second sign-up of their own, shown with my link: not this link's.
    const { browser: otherBrowser } = await passkeySignUp(await SoftAuthenticator.create());
    const confirmed = await confirmIn(await lastMailLink(email), otherBrowser);
    expect(confirmed.status).toBe(200);
    const me = await json<{ user: { id: string } }>(await api("/v1/me", { cookie: cookieOf(confirmed) }));
    expect(await storedPasskeys(me.user.id)).toEqual([]);
    await expectPasskeyFailed(await signInWith(strangers));
  });

  it("validates the sign-up details like the email sign-up does", async () => {
    const response = await post("/v1/auth/passkey/register/options", { email: "nope", name: "", team: "T" });
    expect(response.status).toBe(400);
    expect(await json(response)).toMatchObject({ error: "invalid_request" });
  });

  it("needs our Origin on every ceremony step", async () => {
    const evil = { headers: { Origin: "https://evil.example" } };
    const attempts = await Promise.all([
      post("/v1/auth/passkey/register/options", { email: `${unique("o")}@example.com`, name: "O", team: "T" }, evil),
      post("/v1/auth/passkey/register/verify", {}, evil),
      post("/v1/auth/passkey/login/options", {}, evil),
      post("/v1/auth/passkey/login/verify", {}, evil),
    ]);
    expect(attempts.map((r) => r.status)).toEqual([403, 403, 403, 403]);
  });
});

describe("managing my passkeys", () => {
  it("adds a passkey while signed in (excluding the ones I have), lists it, and deletes it", async () => {
    const { member, authenticator: phone } = await passkeyMember();
    const { options } = await registerOptions({}, member.cookie);
    expect(options.excludeCredentials?.map((c) => c.id)).toEqual([phone.id]);
    expect(options.user.name).toBe(member.email);

    const laptop = await SoftAuthenticator.create();
    const added = await addPasskeyTo(member, laptop);
    expect(added.status).toBe(201);
    expect(await json(added)).toEqual({ id: laptop.id });
    const audited = await env.DB.prepare(
      "SELECT COUNT(*) AS n FROM audit_log WHERE team_id = ? AND action = 'passkey.added'",
    )
      .bind(member.teamId)
      .first();
    expect(audited?.n).toBe(2);

    const { passkeys } = await json<{ passkeys: Array<Record<string, unknown>> }>(
      await api("/v1/auth/passkeys", { cookie: member.cookie }),
    );
    expect(passkeys).toEqual([
      { id: phone.id, deviceName: "Pixel 8", createdAt: expect.any(Number), lastUsedAt: null },
      { id: laptop.id, deviceName: "Laptop", createdAt: expect.any(Number), lastUsedAt: null },
    ]);
    expect((await signInWith(laptop)).status).toBe(200);

    const deleted = await api(`/v1/auth/passkeys/${laptop.id}`, { method: "DELETE", cookie: member.cookie });
    expect(deleted.status).toBe(200);
    expect(await storedPasskeys(member.userId)).toEqual([{ id: phone.id }]);
    await expectPasskeyFailed(await signInWith(laptop));
    expect((await api(`/v1/auth/passkeys/${laptop.id}`, { method: "DELETE", cookie: member.cookie })).status).toBe(404);
  });

  it("another user's passkey cannot be deleted: 404, and it still works", async () => {
    const { authenticator } = await passkeyMember();
    const other = await signUp("Mallory");
    const attempt = await api(`/v1/auth/passkeys/${authenticator.id}`, { method: "DELETE", cookie: other.cookie });
    expect(attempt.status).toBe(404);
    expect((await signInWith(authenticator)).status).toBe(200);
  });

  it("a registration challenge belongs to the user who asked for it", async () => {
    const alice = await signUp("Alice");
    const bob = await signUp("Bob");
    const { challengeId, options } = await registerOptions({}, alice.cookie);
    const authenticator = await SoftAuthenticator.create();
    const response = await authenticator.register(options);
    await expectPasskeyFailed(
      await post("/v1/auth/passkey/register/verify", { challengeId, response }, { cookie: bob.cookie }),
    );
    await expectPasskeyFailed(await post("/v1/auth/passkey/register/verify", { challengeId, response }));
    expect(await storedPasskeys(bob.userId)).toEqual([]);
    // Neither attempt spent it: Alice can still finish.
    const finished = await post(
      "/v1/auth/passkey/register/verify",
      { challengeId, response },
      { cookie: alice.cookie },
    );
    expect(finished.status).toBe(201);
  });

  it("the same passkey cannot be registered twice", async () => {
    const { member, authenticator } = await passkeyMember();
    const other = await signUp("Eve");
    await expectPasskeyFailed(await addPasskeyTo(other, authenticator));
    await expectPasskeyFailed(await addPasskeyTo(member, authenticator));
    expect(await storedPasskeys(member.userId)).toHaveLength(1);
  });

  it("adding and listing need a session; signed out, options need sign-up details", async () => {
    expect((await api("/v1/auth/passkeys")).status).toBe(401);
    expect((await api("/v1/auth/passkeys/abc", { method: "DELETE" })).status).toBe(401);
    const options = await post("/v1/auth/passkey/register/options", {});
    expect(options.status).toBe(401);
  });
});
