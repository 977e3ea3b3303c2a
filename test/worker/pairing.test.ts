/** Pairing a phone: a one-time link that signs the phone in as the same person, only once they tap. */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../worker/crypto";
import { api, cookieOf, json, ORIGIN, signUp, tokenOf } from "./helpers";

const post = (path: string, body: unknown, init: RequestInit & { cookie?: string } = {}) =>
  api(path, { method: "POST", body: JSON.stringify(body), ...init });

async function newPairing(cookie: string) {
  const response = await post("/v1/pairing", {}, { cookie });
  expect(response.status).toBe(201);
  return json<{ url: string; expiresAt: number }>(response);
}

/** The phone's tap: a claim with `confirm: true`. */
const claim = (token: string, init: RequestInit = {}) => post("/v1/pairing/claim", { token, confirm: true }, init);

async function expectInvalid(response: Response) {
  expect(response.status).toBe(400);
  expect(await json(response)).toMatchObject({ error: "invalid_pairing" });
  expect(response.headers.get("Set-Cookie")).toBeNull();
}

describe("pairing a phone", () => {
  it("the phone gets its own session for the same user and team, and the link works once", async () => {
    const desktop = await signUp("Desk");
    const before = Date.now();
    const { url, expiresAt } = await newPairing(desktop.cookie);
    expect(url).toMatch(new RegExp(`^${ORIGIN}/pair\\?token=[A-Za-z0-9_-]{43}$`));
    expect(expiresAt).toBeGreaterThanOrEqual(before + 5 * 60 * 1000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 5 * 60 * 1000);

    const claimed = await claim(tokenOf(url));
    expect(claimed.status).toBe(200);
    const phone = cookieOf(claimed);
    expect(phone).toMatch(/^__Host-tapgate=/);
    expect(phone).not.toBe(desktop.cookie);
    const me = await json(await api("/v1/me", { cookie: phone }));
    expect(me).toMatchObject({ user: { id: desktop.userId }, team: { id: desktop.teamId }, role: "owner" });
    const session = await env.DB.prepare("SELECT method FROM web_sessions WHERE user_id = ? ORDER BY created_at DESC")
      .bind(desktop.userId)
      .first();
    expect(session?.method).toBe("pairing");

    await expectInvalid(await claim(tokenOf(url)));
    // The desktop stays signed in.
    expect((await api("/v1/me", { cookie: desktop.cookie })).status).toBe(200);
  });

  it("stores only the token's hash, and audits making and claiming it", async () => {
    const desktop = await signUp("Hash");
    const token = tokenOf((await newPairing(desktop.cookie)).url);
    const row = await env.DB.prepare("SELECT * FROM pairing_tokens WHERE token_hash = ?")
      .bind(sha256Hex(token))
      .first();
    expect(row).toMatchObject({ user_id: desktop.userId, team_id: desktop.teamId, used_at: null });
    expect(JSON.stringify(row)).not.toContain(token);
    expect((await claim(token)).status).toBe(200);
    const { results } = await env.DB.prepare(
      "SELECT action FROM audit_log WHERE team_id = ? AND action LIKE 'pairing.%' ORDER BY seq",
    )
      .bind(desktop.teamId)
      .all();
    expect(results.map((r) => r.action)).toEqual(["pairing.created", "pairing.claimed"]);
  });

  it("an expired or unknown token fails", async () => {
    const desktop = await signUp("Late");
    const token = tokenOf((await newPairing(desktop.cookie)).url);
    await env.DB.prepare("UPDATE pairing_tokens SET expires_at = ? WHERE token_hash = ?")
      .bind(Date.now() - 1, sha256Hex(token))
      .run();
    await expectInvalid(await claim(token));
    await expectInvalid(await claim("A".repeat(43)));
    expect((await claim("short")).status).toBe(400);
  });

  it("checks the Origin on making and claiming, and making one needs a session", async () => {
    const desktop = await signUp("Origin");
    const evil = { headers: { Origin: "https://evil.example" } };
    expect((await post("/v1/pairing", {}, { ...evil, cookie: desktop.cookie })).status).toBe(403);
    expect((await post("/v1/pairing", {})).status).toBe(401);
    const token = tokenOf((await newPairing(desktop.cookie)).url);
    expect((await claim(token, evil)).status).toBe(403);
    // The refused claim did not spend it.
    expect((await claim(token)).status).toBe(200);
  });

  it("opening the link signs nothing in: 409 confirm_required names the account, the token stays unused", async () => {
    const desktop = await signUp("Desk");
    const token = tokenOf((await newPairing(desktop.cookie)).url);
    // A signed-out phone (or a link scanner), and a browser already signed in as the same person.
    for (const init of [{}, { cookie: desktop.cookie }]) {
      const asked = await post("/v1/pairing/claim", { token }, init);
      expect(asked.status).toBe(409);
      expect(await json(asked)).toMatchObject({
        error: "confirm_required",
        account: { email: desktop.email, name: "Desk" },
      });
      expect(asked.headers.get("Set-Cookie")).toBeNull();
    }
    const unused = await env.DB.prepare("SELECT used_at FROM pairing_tokens WHERE token_hash = ?")
      .bind(sha256Hex(token))
      .first();
    expect(unused).toEqual({ used_at: null });
    await expectInvalid(await post("/v1/pairing/claim", { token: "A".repeat(43) }));
    // The tap signs the phone in.
    const tapped = await claim(token);
    expect(tapped.status).toBe(200);
    expect(await json(await api("/v1/me", { cookie: cookieOf(tapped) }))).toMatchObject({
      user: { id: desktop.userId },
    });
  });
});
