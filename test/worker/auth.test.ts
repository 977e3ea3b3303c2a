import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../worker/crypto";
import app from "../../worker/index";
import { api, confirmLink, cookieOf, json, lastMailLink, ORIGIN, outbox, signUp, tokenOf, unique } from "./helpers";
import { openLive } from "./team-helpers";

const post = (path: string, body: unknown, init: RequestInit & { cookie?: string } = {}) =>
  api(path, { method: "POST", body: JSON.stringify(body), ...init });

describe("sign-up and sign-in by one-time email link", () => {
  it("signs up: the link creates the user and a team they own, and signs them in", async () => {
    const email = `${unique("new")}@Example.com`;
    const signup = await post("/v1/auth/signup", { email, name: "Grace", team: "Compilers" });
    expect(signup.status).toBe(202);
    const link = await lastMailLink(email.toLowerCase());
    expect(link).toMatch(new RegExp(`^${ORIGIN}/signin\\?token=[A-Za-z0-9_-]{43}$`));
    const confirmed = await confirmLink(link);
    expect(confirmed.status).toBe(200);
    const setCookie = confirmed.headers.get("Set-Cookie") ?? "";
    expect(setCookie).toMatch(/^__Host-tapgate=/);
    expect(setCookie).toMatch(/Secure/);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Lax/);
    expect(setCookie).toMatch(/Path=\//);
    const me = await json(await api("/v1/me", { cookie: cookieOf(confirmed) }));
    expect(me).toMatchObject({
      user: { email: email.toLowerCase(), name: "Grace" },
      team: { name: "Compilers" },
      role: "owner",
    });
  });

  it("the Worker serves no pages: /signin and /device are the PWA's (assets), behind run_worker_first = /v1/*", async () => {
    for (const path of ["/signin?token=abc", "/device?code=BCDF-GHJK"]) {
      const response = await app.request(`${ORIGIN}${path}`, {}, env);
      expect(response.status, path).toBe(404);
      expect(await json(response)).toMatchObject({ error: "not_found" });
    }
  });

  it("a link works exactly once", async () => {
    const email = `${unique("once")}@example.com`;
    await post("/v1/auth/signup", { email, name: "Lin", team: "T" });
    const link = await lastMailLink(email);
    expect((await confirmLink(link)).status).toBe(200);
    const again = await confirmLink(link);
    expect(again.status).toBe(400);
    expect(await json(again)).toMatchObject({ error: "invalid_link" });
  });

  it("stores only the hash of a link token, and an expired link fails", async () => {
    const email = `${unique("exp")}@example.com`;
    await post("/v1/auth/signin", { email }); // unknown: nothing sent
    await post("/v1/auth/signup", { email, name: "Exp", team: "T" });
    const token = tokenOf(await lastMailLink(email));
    const row = await env.DB.prepare("SELECT token_hash FROM sign_in_links WHERE email = ?").bind(email).first();
    expect(row?.token_hash).toBe(sha256Hex(token));
    await env.DB.prepare("UPDATE sign_in_links SET expires_at = ? WHERE token_hash = ?")
      .bind(Date.now() - 1, sha256Hex(token))
      .run();
    expect((await post("/v1/auth/link", { token })).status).toBe(400);
  });

  it("does not enumerate accounts: the same 202 whether or not the address exists", async () => {
    const member = await signUp("Known");
    const unknown = `${unique("nobody")}@example.com`;
    const answers = await Promise.all([
      post("/v1/auth/signin", { email: member.email }),
      post("/v1/auth/signin", { email: unknown }),
      post("/v1/auth/signup", { email: member.email, name: "Again", team: "Dup" }),
    ]);
    expect(answers.map((r) => r.status)).toEqual([202, 202, 202]);
    const bodies = await Promise.all(answers.slice(0, 2).map((r) => r.json()));
    expect(bodies[0]).toEqual(bodies[1]);
    const { messages: none } = await json<{ messages: unknown[] }>(await outbox(unknown));
    expect(none).toEqual([]);
    // Signing up with a known address sends a sign-in link into the existing team, not a new team.
    const signedIn = await confirmLink(await lastMailLink(member.email));
    const me = await json<{ team: { id: string } }>(await api("/v1/me", { cookie: cookieOf(signedIn) }));
    expect(me.team.id).toBe(member.teamId);
  });

  it("signs out: the cookie stops working", async () => {
    const member = await signUp();
    expect((await post("/v1/auth/signout", {}, { cookie: member.cookie })).status).toBe(200);
    expect((await api("/v1/me", { cookie: member.cookie })).status).toBe(401);
  });

  it("signing out ends that browser's live feed, and only that one", async () => {
    const member = await signUp();
    const other = await confirmLink(
      await (async () => {
        await post("/v1/auth/signin", { email: member.email });
        return lastMailLink(member.email);
      })(),
    );
    const laptop = await openLive(member);
    const phone = await openLive({ ...member, cookie: cookieOf(other) });
    const closed = new Promise<CloseEvent>((resolve) => laptop.ws.addEventListener("close", resolve));
    expect((await post("/v1/auth/signout", {}, { cookie: member.cookie })).status).toBe(200);
    expect((await closed).code).toBe(4003);
    expect(phone.ws.readyState).toBe(WebSocket.READY_STATE_OPEN);
  });

  it("refuses state-changing requests from another origin", async () => {
    const member = await signUp();
    const evil = { headers: { Origin: "https://evil.example" }, cookie: member.cookie };
    const attempts = [
      await post("/v1/keys", { label: "x" }, evil),
      await post("/v1/auth/signout", {}, evil),
      await post("/v1/auth/signin", { email: member.email }, { headers: { Origin: "https://evil.example" } }),
      await api("/v1/keys", { method: "POST", body: "{}", cookie: member.cookie, headers: { Origin: "" } }),
    ];
    expect(attempts.map((r) => r.status)).toEqual([403, 403, 403, 403]);
    expect((await api("/v1/me", { cookie: member.cookie })).status).toBe(200);
  });

  it("validates sign-up input precisely", async () => {
    const response = await post("/v1/auth/signup", { email: "not-an-email", name: "", team: "T" });
    expect(response.status).toBe(400);
    const body = await json<{ message: string }>(response);
    expect(body.message).toContain("email");
    expect(body.message).toContain("name");
  });
});

describe("API keys", () => {
  it("shows a key once, stores only its hash, lists it by prefix", async () => {
    const member = await signUp();
    const created = await api("/v1/keys", {
      method: "POST",
      cookie: member.cookie,
      body: JSON.stringify({ label: "ci" }),
    });
    expect(created.status).toBe(201);
    const { id, key, prefix } = await json<{ id: string; key: string; prefix: string }>(created);
    expect(key).toMatch(/^tg_[0-9A-Za-z]{43}$/);
    expect(key.startsWith(prefix)).toBe(true);
    const row = await env.DB.prepare("SELECT key_hash FROM api_keys WHERE id = ?").bind(id).first();
    expect(row?.key_hash).toBe(sha256Hex(key));
    const listed = await api("/v1/keys", { cookie: member.cookie });
    const text = await listed.text();
    expect(text).not.toContain(key);
    expect(JSON.parse(text).keys).toEqual([expect.objectContaining({ id, label: "ci", prefix, revokedAt: null })]);
  });

  it("revoking twice keeps the first revocation time (a retry reaches the sessions again)", async () => {
    const member = await signUp();
    const { id } = await json<{ id: string }>(
      await api("/v1/keys", { method: "POST", cookie: member.cookie, body: JSON.stringify({ label: "x" }) }),
    );
    const first = await api(`/v1/keys/${id}`, { method: "DELETE", cookie: member.cookie });
    expect(first.status).toBe(200);
    const { revokedAt } = await json<{ revokedAt: number }>(first);
    const again = await api(`/v1/keys/${id}`, { method: "DELETE", cookie: member.cookie });
    expect(again.status).toBe(200);
    expect(await json(again)).toMatchObject({ id, revokedAt, deniedRequests: 0 });
    expect((await api("/v1/keys/key_0000000000000000000000", { method: "DELETE", cookie: member.cookie })).status).toBe(
      404,
    );
  });
});

describe("local mode", () => {
  it("the dev outbox lists messages newest last", async () => {
    const email = `${unique("order")}@example.com`;
    await post("/v1/auth/signup", { email, name: "O", team: "T" });
    await post("/v1/auth/signup", { email, name: "O", team: "T" });
    const { messages } = await json<{ messages: Array<{ sentAt: number; to: string; subject: string; text: string }> }>(
      await outbox(email),
    );
    expect(messages).toHaveLength(2);
    expect(messages[0]?.sentAt).toBeLessThanOrEqual(messages[1]?.sentAt ?? 0);
    expect(messages[1]).toMatchObject({ to: email, subject: "Confirm your Tapgate sign-up" });
  });
});
