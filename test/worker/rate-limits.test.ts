/** Rate limits of sign-up, sign-in, passkey options and invite mail: per address and per client. */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { api, json, outbox, signUp, unique } from "./helpers";
import { addMember } from "./team-helpers";

const post = (path: string, body: unknown, ip?: string, cookie?: string) =>
  api(path, {
    method: "POST",
    body: JSON.stringify(body),
    ...(cookie ? { cookie } : {}),
    ...(ip ? { headers: { "CF-Connecting-IP": ip } } : {}),
  });

const signIn = (email: string, ip?: string) => post("/v1/auth/signin", { email }, ip);

let nets = 0;
/** An address of its own per test, so tests do not share a client's count. */
const newIp = () => `198.51.${100 + (++nets >> 8)}.${nets & 255}`;

async function expectLimited(res: Response) {
  expect(res.status).toBe(429);
  const body = await json(res);
  expect(body).toMatchObject({ error: "rate_limited" });
  const retryAfter = Number(res.headers.get("Retry-After"));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  return { body, retryAfter };
}

async function mailCount(email: string): Promise<number> {
  return (await json<{ messages: unknown[] }>(await outbox(email))).messages.length;
}

describe("mail per address", () => {
  it("5 per 15 minutes, counted alike and answered alike for a known and an unknown address", async () => {
    const known = (await signUp("Known")).email;
    const unknown = `${unique("nobody")}@example.com`;
    // Signing up counted once for the known address; the unknown one gets its first turn too.
    expect((await signIn(unknown)).status).toBe(202);
    const sentBefore = await mailCount(known);
    for (let i = 0; i < 4; i++) {
      // Each request from another client: only the address's own count can bite.
      expect((await signIn(known)).status).toBe(202);
      expect((await signIn(unknown)).status).toBe(202);
    }
    const [a, b] = [await expectLimited(await signIn(known)), await expectLimited(await signIn(unknown))];
    expect(a.body).toEqual(b.body);
    expect(Math.abs(a.retryAfter - b.retryAfter)).toBeLessThanOrEqual(1);
    expect(a.retryAfter).toBeLessThanOrEqual(15 * 60);
    // The limited request sent nothing.
    expect(await mailCount(known)).toBe(sentBefore + 4);
    expect(await mailCount(unknown)).toBe(0);
  });

  it("sign-up, sign-in (any spelling of the address) and invites share the address's count", async () => {
    const owner = await signUp("Inviter");
    const email = `${unique("invitee")}@example.com`;
    expect((await post("/v1/auth/signup", { email, name: "New", team: "T" })).status).toBe(202);
    expect((await signIn(email.toUpperCase())).status).toBe(202);
    expect((await post("/v1/invites", { role: "viewer", email }, undefined, owner.cookie)).status).toBe(201);
    expect((await post("/v1/invites", { role: "viewer", email }, undefined, owner.cookie)).status).toBe(201);
    expect((await signIn(email)).status).toBe(202);
    await expectLimited(await post("/v1/invites", { role: "viewer", email }, undefined, owner.cookie));
    await expectLimited(await post("/v1/auth/signup", { email, name: "New", team: "T" }));
    // The refused invite was not made, and nothing more was mailed (the sign-up link and two
    // invites: a sign-in for an address without an account mails nothing).
    const { invites } = await json<{ invites: unknown[] }>(await api("/v1/invites", { cookie: owner.cookie }));
    expect(invites).toHaveLength(2);
    expect(await mailCount(email)).toBe(3);
    // An invite without an address mails nothing and is not limited.
    expect((await post("/v1/invites", { role: "viewer" }, undefined, owner.cookie)).status).toBe(201);
  });
});

describe("mail per client", () => {
  it("30 per 10 minutes from one address; another client is not affected", async () => {
    const ip = newIp();
    for (let i = 0; i < 30; i++) {
      expect((await signIn(`${unique("many")}@example.com`, ip)).status).toBe(202);
    }
    const { retryAfter } = await expectLimited(await signIn(`${unique("many")}@example.com`, ip));
    expect(retryAfter).toBeLessThanOrEqual(10 * 60);
    await expectLimited(
      await post("/v1/auth/signup", { email: `${unique("x")}@example.com`, name: "X", team: "X" }, ip),
    );
    expect((await signIn(`${unique("other")}@example.com`, newIp())).status).toBe(202);
  });

  it("an IPv6 client is counted by its /64", async () => {
    const prefix = `2001:db8:${(++nets).toString(16)}:1`;
    for (let i = 0; i < 30; i++) {
      const ip = `${prefix}:${i.toString(16)}::${(i + 1).toString(16)}`;
      expect((await signIn(`${unique("v6")}@example.com`, ip)).status).toBe(202);
    }
    await expectLimited(await signIn(`${unique("v6")}@example.com`, `${prefix}:ffff:ffff:ffff:ffff`));
    expect((await signIn(`${unique("v6")}@example.com`, `2001:db8:${nets.toString(16)}:2::1`)).status).toBe(202);
  });
});

describe("passkey options per client", () => {
  it("60 challenges per 10 minutes, sign-in and sign-up options together", async () => {
    const ip = newIp();
    for (let i = 0; i < 30; i++) {
      expect((await post("/v1/auth/passkey/login/options", {}, ip)).status).toBe(200);
      const signup = { email: `${unique("pk")}@example.com`, name: "P", team: "P" };
      expect((await post("/v1/auth/passkey/register/options", signup, ip)).status).toBe(200);
    }
    await expectLimited(await post("/v1/auth/passkey/login/options", {}, ip));
    await expectLimited(
      await post(
        "/v1/auth/passkey/register/options",
        { email: `${unique("pk")}@example.com`, name: "P", team: "P" },
        ip,
      ),
    );
    expect((await post("/v1/auth/passkey/login/options", {}, newIp())).status).toBe(200);
  });
});

describe("the counters", () => {
  it("name neither addresses nor clients, and windows that are over are swept", async () => {
    const email = `${unique("stored")}@example.com`;
    const ip = newIp();
    await env.DB.prepare("INSERT INTO rate_limits (key, window_start, expires_at, hits) VALUES ('old', 0, ?, 3)")
      .bind(Date.now() - 1)
      .run();
    expect((await signIn(email, ip)).status).toBe(202);
    const { results } = await env.DB.prepare("SELECT key, hits FROM rate_limits").all<{ key: string }>();
    expect(results.map((r) => r.key)).not.toContain("old");
    const text = JSON.stringify(results);
    expect(text).not.toContain(email);
    expect(text).not.toContain(ip);
    for (const r of results) expect(r.key).toMatch(/^[0-9a-f]{64}$/);
  });

  it("a signed-in member's own actions are not limited by these counters", async () => {
    const owner = await signUp("Busy");
    const admin = await addMember(owner, "admin");
    const ip = newIp();
    for (let i = 0; i < 35; i++) {
      expect((await api("/v1/me", { cookie: admin.cookie, headers: { "CF-Connecting-IP": ip } })).status).toBe(200);
    }
  });
});
