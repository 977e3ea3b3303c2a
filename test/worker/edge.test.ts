/** The edge: local mode only for this machine, the host name pinned to APP_ORIGIN, security headers. */
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import app from "../../worker/index";
import { api, json, ORIGIN, outbox, signUp } from "./helpers";

const LOOPBACK = { "CF-Connecting-IP": "127.0.0.1" };

/** The Worker with other settings than the suite's (APP_ORIGIN, DEV_OUTBOX). */
function withEnv(vars: Partial<typeof env>, url: string, init: RequestInit = {}) {
  return app.request(url, init, { ...env, ...vars });
}

describe("the dev outbox", () => {
  it("answers this machine: a loopback client on a loopback host", async () => {
    const member = await signUp("Outbox");
    for (const host of ["http://localhost:8787", "http://127.0.0.1:8787", "http://[::1]:8787"]) {
      const res = await SELF.fetch(`${host}/v1/dev/outbox?to=${encodeURIComponent(member.email)}`, {
        headers: LOOPBACK,
      });
      expect(res.status).toBe(200);
      expect((await json<{ messages: unknown[] }>(res)).messages).toHaveLength(1);
    }
    const v6 = await SELF.fetch("http://localhost/v1/dev/outbox", { headers: { "CF-Connecting-IP": "::1" } });
    expect(v6.status).toBe(200);
  });

  it("is not there for a public host name, even from a loopback client (a tunnel's Host)", async () => {
    await signUp("Tunnel");
    for (const url of [`${ORIGIN}/v1/dev/outbox`, "https://tapgate.example.com/v1/dev/outbox"]) {
      const res = await SELF.fetch(url, { headers: LOOPBACK });
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ error: "not_found" });
    }
  });

  it("is not there for a remote client on a loopback host (DNS rebinding, a tunnel rewriting Host)", async () => {
    const forwarded: Record<string, string>[] = [
      { "CF-Connecting-IP": "203.0.113.7" },
      { "CF-Connecting-IP": "2001:db8::7" },
      {},
      { ...LOOPBACK, "X-Forwarded-For": "203.0.113.7" },
      { ...LOOPBACK, "CF-Ray": "8f00000000000000-AMS" },
      { ...LOOPBACK, Forwarded: "for=203.0.113.7" },
    ];
    for (const headers of forwarded) {
      const res = await SELF.fetch("http://localhost:8787/v1/dev/outbox", { headers });
      expect(res.status, JSON.stringify(headers)).toBe(404);
    }
  });

  it("off loopback (`npm start -- --ip 0.0.0.0`), a LAN host sending loopback headers needs the printed token", async () => {
    const DEV_OUTBOX_TOKEN = "lan-outbox-token-0123456789abcdefghijklmnopq";
    const member = await signUp("Lan");
    const url = `http://localhost:8787/v1/dev/outbox?to=${encodeURIComponent(member.email)}`;
    // What any host on the network can send to a server listening on 0.0.0.0.
    for (const headers of [LOOPBACK, { ...LOOPBACK, Authorization: "Bearer wrong" }]) {
      const res = await withEnv({ DEV_OUTBOX_TOKEN }, url, { headers });
      expect(res.status, JSON.stringify(headers)).toBe(404);
    }
    expect((await withEnv({ DEV_OUTBOX_TOKEN }, `${url}&token=wrong`, { headers: LOOPBACK })).status).toBe(404);
    const bearer = await withEnv({ DEV_OUTBOX_TOKEN }, url, {
      headers: { ...LOOPBACK, Authorization: `Bearer ${DEV_OUTBOX_TOKEN}` },
    });
    expect(bearer.status).toBe(200);
    expect((await json<{ messages: unknown[] }>(bearer)).messages).toHaveLength(1);
    expect(
      (await withEnv({ DEV_OUTBOX_TOKEN }, `${url}&token=${DEV_OUTBOX_TOKEN}`, { headers: LOOPBACK })).status,
    ).toBe(200);
  });

  it("is there only when DEV_OUTBOX is exactly 1", async () => {
    expect((await outbox()).status).toBe(200);
    for (const value of [undefined, "", "0", "true", "yes", " 1"]) {
      const res = await withEnv({ DEV_OUTBOX: value }, "http://localhost:8787/v1/dev/outbox", { headers: LOOPBACK });
      expect(res.status, String(value)).toBe(404);
    }
  });
});

describe("the host name is pinned to APP_ORIGIN", () => {
  const APP_ORIGIN = "https://tapgate.example.com";

  it("answers its own host; any other host gets 421 misdirected", async () => {
    expect((await withEnv({ APP_ORIGIN }, `${APP_ORIGIN}/v1/health`)).status).toBe(200);
    for (const url of [
      "https://evil.example.net/v1/health",
      "http://localhost:8787/v1/health",
      "https://tapgate.example.com:8443/v1/health",
      "https://tapgate.example.com.evil.net/v1/me",
    ]) {
      const res = await withEnv({ APP_ORIGIN }, url, { headers: LOOPBACK });
      expect(res.status, url).toBe(421);
      expect(await res.json()).toMatchObject({ error: "misdirected" });
    }
  });

  it("a rebound page cannot read the outbox or post with a forged Origin", async () => {
    // The attacker's name resolves to 127.0.0.1; the browser sends Host: its own name.
    const rebound = "http://rebind.evil.net:8787";
    const read = await withEnv({ APP_ORIGIN: "http://localhost:8787" }, `${rebound}/v1/dev/outbox`, {
      headers: LOOPBACK,
    });
    expect(read.status).toBe(421);
    const post = await withEnv({ APP_ORIGIN: "http://localhost:8787" }, `${rebound}/v1/auth/signin`, {
      method: "POST",
      headers: { ...LOOPBACK, Origin: "http://localhost:8787", "Content-Type": "application/json" },
      body: JSON.stringify({ email: "ada@example.com" }),
    });
    expect(post.status).toBe(421);
  });

  it("a loopback APP_ORIGIN answers every loopback name (the browser on localhost, scripts on 127.0.0.1)", async () => {
    for (const url of [
      "http://localhost:8787/v1/health",
      "http://127.0.0.1:8787/v1/health",
      "http://[::1]:9/v1/health",
    ]) {
      expect((await withEnv({ APP_ORIGIN: "http://localhost:8787" }, url)).status, url).toBe(200);
    }
  });
});

describe("security headers", () => {
  it("every /v1 answer says nosniff: successes, errors and unknown routes", async () => {
    const answers = [
      await api("/v1/health"),
      await api("/v1/me"),
      await api("/v1/no/such/route"),
      await api("/v1/auth/signin", { method: "POST", body: "{" }),
      await api("/v1/auth/signin", { method: "POST", body: "{}", headers: { Origin: "https://evil.example" } }),
    ];
    expect(answers.map((r) => r.status)).toEqual([200, 401, 404, 400, 403]);
    for (const res of answers) expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
  });

  it("HSTS over HTTPS (APP_ORIGIN https, or an https request), never on http://localhost", async () => {
    const hsts = "max-age=31536000; includeSubDomains";
    expect((await api("/v1/health")).headers.get("Strict-Transport-Security")).toBe(hsts);
    expect((await api("/v1/me")).headers.get("Strict-Transport-Security")).toBe(hsts);
    const pinned = await withEnv({ APP_ORIGIN: "https://tapgate.example.com" }, "https://tapgate.example.com/v1/me");
    expect(pinned.headers.get("Strict-Transport-Security")).toBe(hsts);
    const local = await SELF.fetch("http://localhost:8787/v1/health");
    expect(local.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(local.headers.get("Strict-Transport-Security")).toBeNull();
    const localOrigin = await withEnv({ APP_ORIGIN: "http://localhost:8787" }, "http://localhost:8787/v1/health");
    expect(localOrigin.headers.get("Strict-Transport-Security")).toBeNull();
  });
});
