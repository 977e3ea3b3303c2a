/** `tapgate login` by device code (RFC 8628): the terminal's side and the approver's side. */
import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { hmacSha256Hex, sha256Hex } from "../../worker/crypto";
import app from "../../worker/index";
import { api, connectAgent, createKey, json, type Member, ORIGIN, signUp, unique } from "./helpers";

interface CodeAnswer {
  deviceCode: string;
  userCode: string;
  verificationUri: string;
  verificationUriComplete: string;
  expiresIn: number;
  interval: number;
}

interface TokenAnswer {
  key: string;
  keyId: string;
  prefix: string;
  team: { id: string; name: string };
  user: { id: string; name: string; email: string };
}

let ips = 0;
/** Each test asks from its own address, so the per-IP rate limit only bites where a test wants it. */
const newIp = () => `203.0.113.${++ips}`;

function requestCode(body: object = { clientName: "ada-laptop" }, ip = newIp()): Promise<Response> {
  return api("/v1/device/code", { method: "POST", body: JSON.stringify(body), headers: { "CF-Connecting-IP": ip } });
}

async function newCode(clientName = "ada-laptop"): Promise<CodeAnswer> {
  const response = await requestCode({ clientName });
  expect(response.status).toBe(200);
  return json<CodeAnswer>(response);
}

function poll(deviceCode: string): Promise<Response> {
  return api("/v1/device/token", { method: "POST", body: JSON.stringify({ deviceCode }) });
}

async function pollError(deviceCode: string): Promise<string> {
  const response = await poll(deviceCode);
  expect(response.status).toBe(400);
  return (await json<{ error: string }>(response)).error;
}

function decide(member: Member, userCode: string, decision: "approve" | "deny"): Promise<Response> {
  return api(`/v1/device/${userCode}/${decision}`, { method: "POST", cookie: member.cookie });
}

/** The per-IP rate limit's key for an address: HMAC-SHA-256 with the server's secret. */
const ipHash = (ip: string) => hmacSha256Hex(env.RATE_LIMIT_SECRET ?? "", `device-code-ip:${ip}`);

/** The terminal waited its interval (without sleeping in the test). */
async function waitedInterval(deviceCode: string): Promise<void> {
  await env.DB.prepare("UPDATE device_codes SET last_polled_at = last_polled_at - 2000 WHERE device_code_hash = ?")
    .bind(sha256Hex(deviceCode))
    .run();
}

async function expire(deviceCode: string): Promise<void> {
  await env.DB.prepare("UPDATE device_codes SET expires_at = ? WHERE device_code_hash = ?")
    .bind(Date.now() - 1, sha256Hex(deviceCode))
    .run();
}

describe("device code sign-in", () => {
  it("code → pending → approve → the key exactly once → expired_token", async () => {
    const ada = await signUp("Ada");
    const code = await newCode("ada-laptop");
    expect(code).toMatchObject({
      userCode: expect.stringMatching(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/),
      verificationUri: `${ORIGIN}/device`,
      verificationUriComplete: `${ORIGIN}/device?code=${code.userCode}`,
      expiresIn: 600,
      interval: 2,
    });
    expect(await pollError(code.deviceCode)).toBe("authorization_pending");

    // The approver may type the code in lower case and without the dash.
    const typed = code.userCode.replace("-", "").toLowerCase();
    const shown = await api(`/v1/device/${typed}`, { cookie: ada.cookie });
    expect(shown.status).toBe(200);
    expect(await json(shown)).toMatchObject({ userCode: code.userCode, clientName: "ada-laptop", status: "pending" });
    expect((await decide(ada, typed, "approve")).status).toBe(200);

    const issued = await poll(code.deviceCode);
    expect(issued.status).toBe(200);
    expect(issued.headers.get("Cache-Control")).toBe("no-store");
    const token = await json<TokenAnswer>(issued);
    expect(token).toMatchObject({
      key: expect.stringMatching(/^tg_[0-9A-Za-z]{43}$/),
      keyId: expect.stringMatching(/^key_/),
      team: { id: ada.teamId, name: "Ada's team" },
      user: { id: ada.userId, name: "Ada", email: ada.email },
    });
    expect(token.key.startsWith(token.prefix)).toBe(true);
    expect(await pollError(code.deviceCode)).toBe("expired_token");

    // The key is an ordinary agent key of the approver, labelled with the terminal's name.
    const { keys } = await json<{ keys: Array<{ id: string; label: string }> }>(
      await api("/v1/keys", { cookie: ada.cookie }),
    );
    expect(keys).toContainEqual(expect.objectContaining({ id: token.keyId, label: "ada-laptop" }));
    const agent = await connectAgent(token.key, unique("sess"));
    agent.ws.close();

    const again = await decide(ada, code.userCode, "approve");
    expect(again.status).toBe(409);
    expect(await json(again)).toMatchObject({ error: "already_decided", status: "consumed" });
    const { results } = await env.DB.prepare("SELECT action FROM audit_log WHERE team_id = ? ORDER BY seq")
      .bind(ada.teamId)
      .all<{ action: string }>();
    expect(results.map((r) => r.action)).toEqual(["team.created", "auth.signed_in", "device.approved", "key.created"]);
  });

  it("shows the approver where the code was asked from, coarsely, and stores no full address", async () => {
    const ada = await signUp();
    const shown = async (headers: Record<string, string>, cf?: { country: string }) => {
      const response = await api("/v1/device/code", {
        method: "POST",
        body: JSON.stringify({ clientName: "ada-laptop" }),
        headers,
        ...(cf ? { cf } : {}),
      } as RequestInit);
      const code = await json<CodeAnswer>(response);
      return json(await api(`/v1/device/${code.userCode}`, { cookie: ada.cookie }));
    };
    const v4 = await shown({ "CF-Connecting-IP": "198.51.100.77" }, { country: "NL" });
    expect(v4).toMatchObject({
      clientName: "ada-laptop",
      requestedFrom: { network: "198.51.100.0/24", country: "NL" },
      createdAt: expect.any(Number),
    });
    const v6 = await shown({ "CF-Connecting-IP": "2001:db8:beef:42::7" });
    expect(v6).toMatchObject({ requestedFrom: { network: "2001:db8:beef::/48" } });
    // An empty header: the test helper gives every other request an address of its own.
    expect(await shown({ "CF-Connecting-IP": "" })).toMatchObject({ requestedFrom: { network: null } });

    const stored = JSON.stringify((await env.DB.prepare("SELECT * FROM device_codes").all()).results);
    expect(stored).not.toContain("198.51.100.77");
    expect(stored).not.toContain("2001:db8:beef:42");
  });

  it("parallel polls of an approved code yield one key", async () => {
    const ada = await signUp();
    const code = await newCode();
    await decide(ada, code.userCode, "approve");
    const answers = await Promise.all([1, 2, 3, 4].map(() => poll(code.deviceCode)));
    expect(answers.map((r) => r.status).sort()).toEqual([200, 400, 400, 400]);
    const { n } = (await env.DB.prepare("SELECT COUNT(*) AS n FROM api_keys WHERE user_id = ?")
      .bind(ada.userId)
      .first<{ n: number }>()) ?? { n: -1 };
    expect(n).toBe(1);
  });

  it("polling faster than the interval gets slow_down", async () => {
    const code = await newCode();
    expect(await pollError(code.deviceCode)).toBe("authorization_pending");
    expect(await pollError(code.deviceCode)).toBe("slow_down");
    await waitedInterval(code.deviceCode);
    expect(await pollError(code.deviceCode)).toBe("authorization_pending");
  });

  it("deny → access_denied, and the code cannot be approved afterwards", async () => {
    const ada = await signUp();
    const code = await newCode();
    expect((await decide(ada, code.userCode, "deny")).status).toBe(200);
    expect(await pollError(code.deviceCode)).toBe("access_denied");
    const late = await decide(ada, code.userCode, "approve");
    expect(late.status).toBe(409);
    expect(await json(late)).toMatchObject({ error: "already_decided", status: "denied" });
    await waitedInterval(code.deviceCode);
    expect(await pollError(code.deviceCode)).toBe("access_denied");
    const { results } = await env.DB.prepare(
      "SELECT action FROM audit_log WHERE team_id = ? AND action LIKE 'device.%'",
    )
      .bind(ada.teamId)
      .all<{ action: string }>();
    expect(results).toEqual([{ action: "device.denied" }]);
  });

  it("an expired code is gone for both sides, approved or not", async () => {
    const ada = await signUp();
    const pending = await newCode();
    await expire(pending.deviceCode);
    expect(await pollError(pending.deviceCode)).toBe("expired_token");
    expect((await api(`/v1/device/${pending.userCode}`, { cookie: ada.cookie })).status).toBe(404);
    const late = await decide(ada, pending.userCode, "approve");
    expect(late.status).toBe(404);
    expect((await json<{ message: string }>(late)).message).toContain("tapgate login");

    const approved = await newCode();
    await decide(ada, approved.userCode, "approve");
    await expire(approved.deviceCode);
    expect(await pollError(approved.deviceCode)).toBe("expired_token");
    expect(await pollError("an-unknown-device-code-of-43-characters-xxx")).toBe("expired_token");
  });

  it("at most 10 codes per IP per 10 minutes: the 11th gets 429 with Retry-After", async () => {
    const ip = newIp();
    for (let i = 0; i < 10; i++) expect((await requestCode({}, ip)).status).toBe(200);
    const limited = await requestCode({}, ip);
    expect(limited.status).toBe(429);
    expect(await json(limited)).toMatchObject({ error: "rate_limited" });
    const retryAfter = Number(limited.headers.get("Retry-After"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(600);
    expect((await requestCode({}, newIp())).status).toBe(200);
    // The window slides: once the oldest codes are older than 10 minutes, the address may ask again.
    await env.DB.prepare("UPDATE device_codes SET created_at = created_at - 600000 WHERE ip_hash = ?")
      .bind(ipHash(ip))
      .run();
    expect((await requestCode({}, ip)).status).toBe(200);
  });

  it("anyone signed in may approve a pending code; the key lands in the approver's team, hidden from others", async () => {
    const ada = await signUp("Ada");
    const bob = await signUp("Bob");
    const code = await newCode("bobs-box");
    // Not yet decided: the code belongs to no team, so Bob (who was shown it) may see and approve it.
    expect((await api(`/v1/device/${code.userCode}`, { cookie: bob.cookie })).status).toBe(200);
    expect((await decide(bob, code.userCode, "approve")).status).toBe(200);
    // Now it is Bob's team's: Ada sees nothing and cannot decide it, exactly as for an unknown code.
    expect((await api(`/v1/device/${code.userCode}`, { cookie: ada.cookie })).status).toBe(404);
    expect((await decide(ada, code.userCode, "approve")).status).toBe(404);
    expect((await decide(ada, code.userCode, "deny")).status).toBe(404);

    const token = await json<TokenAnswer>(await poll(code.deviceCode));
    expect(token.team.id).toBe(bob.teamId);
    const row = await env.DB.prepare("SELECT team_id, user_id, label FROM api_keys WHERE id = ?")
      .bind(token.keyId)
      .first();
    expect(row).toEqual({ team_id: bob.teamId, user_id: bob.userId, label: "bobs-box" });
    const adas = await json<{ keys: unknown[] }>(await api("/v1/keys", { cookie: ada.cookie }));
    expect(adas.keys).toEqual([]);
  });

  it("the human side needs a signed-in person from our origin; agent keys are refused", async () => {
    const ada = await signUp();
    const { key } = await createKey(ada);
    const code = await newCode();
    const path = `/v1/device/${code.userCode}/approve`;
    const attempts = [
      await api(path, { method: "POST" }),
      await api(path, { method: "POST", headers: { Authorization: `Bearer ${key}` } }),
      await api(path, { method: "POST", cookie: ada.cookie, headers: { Origin: "https://evil.example" } }),
      await api(`/v1/device/${code.userCode}`),
    ];
    expect(attempts.map((r) => r.status)).toEqual([401, 403, 403, 401]);
    expect(await pollError(code.deviceCode)).toBe("authorization_pending");
  });

  it("validates input", async () => {
    const attempts = [
      await requestCode({ clientName: "x".repeat(101) }),
      await requestCode({ clientName: "evil\u001b[2Jhost" }),
      await api("/v1/device/token", { method: "POST", body: JSON.stringify({}) }),
      await api("/v1/device/not-a-code", { cookie: (await signUp()).cookie }),
    ];
    expect(attempts.map((r) => r.status)).toEqual([400, 400, 400, 400]);
    expect((await requestCode({})).status).toBe(200);
  });

  it("stores only hashes: neither the device code, the key nor the full address is in D1", async () => {
    const ada = await signUp();
    const code = await json<CodeAnswer>(await requestCode({ clientName: "ada-laptop" }, "192.0.2.213"));
    await decide(ada, code.userCode, "approve");
    const token = await json<TokenAnswer>(await poll(code.deviceCode));
    const row = await env.DB.prepare("SELECT * FROM device_codes WHERE key_id = ?").bind(token.keyId).first();
    expect(row?.device_code_hash).toBe(sha256Hex(code.deviceCode));
    expect(row?.ip_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(row)).not.toContain(code.deviceCode);
    expect(JSON.stringify(row)).not.toContain("192.0.2.213");
    expect(row?.client_network).toBe("192.0.2.0/24"); // only the network, for the approver
    const key = await env.DB.prepare("SELECT * FROM api_keys WHERE id = ?").bind(token.keyId).first();
    expect(key?.key_hash).toBe(sha256Hex(token.key));
    expect(JSON.stringify(key)).not.toContain(token.key);
  });
});

describe("the per-IP hash", () => {
  const storedIpHash = async (deviceCode: string) =>
    (
      await env.DB.prepare("SELECT ip_hash FROM device_codes WHERE device_code_hash = ?")
        .bind(sha256Hex(deviceCode))
        .first<{ ip_hash: string }>()
    )?.ip_hash;

  it("is HMAC-SHA-256 keyed with RATE_LIMIT_SECRET: hashing every IPv4 address does not find it", async () => {
    expect(env.RATE_LIMIT_SECRET).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const ip = newIp();
    const code = await json<CodeAnswer>(await requestCode({}, ip));
    const stored = await storedIpHash(code.deviceCode);
    expect(stored).toBe(ipHash(ip));
    expect(stored).not.toBe(sha256Hex(`device-code-ip:${ip}`));
  });

  it("without the secret, falls back to a per-isolate key and warns once", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const ip = newIp();
      const unset = { ...env, RATE_LIMIT_SECRET: undefined };
      const ask = () =>
        app.request(
          `${ORIGIN}/v1/device/code`,
          { method: "POST", body: "{}", headers: { "Content-Type": "application/json", "CF-Connecting-IP": ip } },
          unset,
        );
      const [first, second] = [await json<CodeAnswer>(await ask()), await json<CodeAnswer>(await ask())];
      const hashes = [await storedIpHash(first.deviceCode), await storedIpHash(second.deviceCode)];
      expect(hashes[0]).toMatch(/^[0-9a-f]{64}$/);
      expect(hashes[1]).toBe(hashes[0]); // one key per isolate: the limit still counts this address
      expect(hashes[0]).not.toBe(ipHash(ip));
      expect(hashes[0]).not.toBe(sha256Hex(`device-code-ip:${ip}`));
      expect(warn.mock.calls.filter(([m]) => String(m).includes("RATE_LIMIT_SECRET"))).toHaveLength(1);
    } finally {
      warn.mockRestore();
    }
  });
});

describe("device code guessing (RFC 8628 §5.1)", () => {
  const guesses = (member: Member, n: number) =>
    Promise.all(
      Array.from({ length: n }, (_, i) =>
        api(`/v1/device/BCDF${"GHJKLMNPQRST"[i] ?? "V"}XWZ`, { cookie: member.cookie }),
      ),
    );

  it("10 unknown codes per person per 10 minutes, then 429 with Retry-After even for a right code", async () => {
    const mallory = await signUp("Mallory");
    const code = await newCode();
    // Parallel guesses cannot slip past the limit: exactly 10 are looked up.
    const statuses = (await guesses(mallory, 12)).map((r) => r.status).sort();
    expect(statuses).toEqual([...Array(10).fill(404), 429, 429]);
    const limited = await api(`/v1/device/${code.userCode}`, { cookie: mallory.cookie });
    expect(limited.status).toBe(429);
    expect(await json(limited)).toMatchObject({ error: "rate_limited" });
    const retryAfter = Number(limited.headers.get("Retry-After"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(600);
    expect((await decide(mallory, code.userCode, "approve")).status).toBe(429);
    expect((await decide(mallory, code.userCode, "deny")).status).toBe(429);
    expect(await pollError(code.deviceCode)).toBe("authorization_pending");

    // Someone else is not limited by Mallory's misses.
    const ada = await signUp("Ada");
    expect((await api(`/v1/device/${code.userCode}`, { cookie: ada.cookie })).status).toBe(200);
    // The window slides: misses older than 10 minutes no longer count.
    await env.DB.prepare("UPDATE device_code_misses SET at = at - 600000 WHERE user_id = ?").bind(mallory.userId).run();
    expect((await api(`/v1/device/${code.userCode}`, { cookie: mallory.cookie })).status).toBe(200);
  });

  it("found codes are not misses; another team's decided code is one, like an unknown code", async () => {
    const ada = await signUp("Ada");
    const bob = await signUp("Bob");
    const code = await newCode();
    for (let i = 0; i < 12; i++) {
      expect((await api(`/v1/device/${code.userCode}`, { cookie: ada.cookie })).status).toBe(200);
    }
    expect((await decide(ada, code.userCode, "approve")).status).toBe(200);
    expect((await decide(ada, code.userCode, "deny")).status).toBe(409);
    const bobs = await Promise.all(Array.from({ length: 11 }, () => decide(bob, code.userCode, "deny")));
    expect(bobs.map((r) => r.status).sort()).toEqual([...Array(10).fill(404), 429]);
    expect((await api(`/v1/device/${code.userCode}`, { cookie: ada.cookie })).status).toBe(200);
  });
});
