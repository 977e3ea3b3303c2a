/** Agents over HTTP: hold a request by long-polling it instead of by a WebSocket. */
import { abortAllDurableObjects, env, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { RPC_ERROR } from "../../sdk/src/protocol";
import { newApiKey } from "../../worker/crypto";
import { SCHEMA_VERSION } from "../../worker/gate/migrations";
import {
  api,
  connectAgent,
  createKey,
  decide,
  flush,
  gateStub,
  json,
  type Member,
  ORIGIN,
  permissionParams,
  settled,
  signUp,
  unique,
} from "./helpers";

const LEASE_MS = 60_000;

function asAgent(key: string, path: string, init: RequestInit = {}) {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${key}`);
  if (init.body !== undefined) headers.set("Content-Type", "application/json");
  return SELF.fetch(`${ORIGIN}${path}`, { ...init, headers });
}

function ask(key: string, sessionId: string, params: object = permissionParams(sessionId)) {
  return asAgent(key, `/v1/agent/sessions/${sessionId}/permissions`, { method: "POST", body: JSON.stringify(params) });
}

const poll = (key: string, approvalId: string, wait = 0) =>
  asAgent(key, `/v1/agent/approvals/${approvalId}?wait=${wait}`);
const cancel = (key: string, approvalId: string) =>
  asAgent(key, `/v1/agent/approvals/${approvalId}`, { method: "DELETE" });

const read = async (member: Member, id: string) =>
  json<Approval>(await api(`/v1/approvals/${id}`, { cookie: member.cookie }));

/** A member with a key and one request held over HTTP. */
async function askOverHttp(params?: (sessionId: string) => object) {
  const owner = await signUp();
  const { key, id: keyId } = await createKey(owner);
  const sessionId = unique("http");
  const created = await ask(key, sessionId, params?.(sessionId));
  expect(created.status).toBe(201);
  const { approvalId, expiresAt } = await json<{ approvalId: string; expiresAt: number }>(created);
  return { owner, key, keyId, sessionId, approvalId, expiresAt, approval: await read(owner, approvalId) };
}

/** The gate's own row, for what the API does not show: the lease. */
function leaseUntil(owner: Member, sessionId: string, approvalId: string) {
  return runInDurableObject(gateStub(owner.teamId, sessionId), (_, state) => {
    return state.storage.sql.exec("SELECT lease_until FROM approvals WHERE id = ?", approvalId).one()
      .lease_until as number;
  });
}

const sweep = (owner: Member, sessionId: string, now: number) =>
  runInDurableObject(gateStub(owner.teamId, sessionId), (gate) => gate.sweep(now));

const waitingPolls = (owner: Member, sessionId: string) =>
  runInDurableObject(gateStub(owner.teamId, sessionId), (gate) => gate.http.polls.size);

/** A second member of the owner's team with their own key (invites come with the dashboard). */
async function colleagueOf(owner: Member): Promise<string> {
  const now = Date.now();
  const userId = unique("usr");
  const { key, hash, prefix } = newApiKey();
  await env.DB.batch([
    env.DB.prepare("INSERT INTO users (id, email, name, created_at) VALUES (?, ?, 'Col', ?)").bind(
      userId,
      `${userId}@example.com`,
      now,
    ),
    env.DB.prepare("INSERT INTO memberships (team_id, user_id, role, created_at) VALUES (?, ?, 'approver', ?)").bind(
      owner.teamId,
      userId,
      now,
    ),
    env.DB.prepare(
      "INSERT INTO api_keys (id, team_id, user_id, key_hash, prefix, label, created_at) VALUES (?, ?, ?, ?, ?, 'x', ?)",
    ).bind(unique("key"), owner.teamId, userId, hash, prefix, now),
  ]);
  return key;
}

describe("agents over HTTP", () => {
  it("creates (201), polls pending (202), and returns the human's choice as the ACP outcome (200)", async () => {
    const { owner, key, sessionId, approvalId, expiresAt, approval } = await askOverHttp();
    expect(approvalId).toMatch(/^apr_/);
    expect(approval).toMatchObject({ state: "pending", expiresAt });
    expect(approval.options.map((o) => o.optionId)).toEqual(["allow", "deny"]); // team policy applies as usual

    const pending = await poll(key, approvalId);
    expect(pending.status).toBe(202);
    expect(await json(pending)).toEqual({ approvalId, state: "pending", expiresAt });

    expect((await decide(owner, approval, "allow")).status).toBe(200);
    const answered = await poll(key, approvalId);
    expect(answered.status).toBe(200);
    expect(await json(answered)).toEqual({
      approvalId,
      state: "allowed",
      reason: "decided",
      outcome: { outcome: "selected", optionId: "allow" },
      _meta: { tapgate: { approvalId, reason: "decided", decidedBy: { name: "Ada", device: "web" } } },
    });

    // The D1 index and the audit log hear of it exactly as for a socket's request.
    await flush(owner.teamId, sessionId);
    const { approvals } = await json<{ approvals: Approval[] }>(
      await api("/v1/approvals?state=resolved&scope=mine", { cookie: owner.cookie }),
    );
    expect(approvals.find((a) => a.id === approvalId)).toMatchObject({ state: "allowed", optionId: "allow" });
    const { results } = await env.DB.prepare("SELECT action FROM audit_log WHERE subject = ? ORDER BY seq")
      .bind(approvalId)
      .all<{ action: string }>();
    expect(results.map((r) => r.action)).toEqual(["approval.requested", "approval.allowed"]);
  });

  it("a long poll waiting when the human decides returns at once with the answer, leaving no waiter", async () => {
    const { owner, key, sessionId, approvalId, approval } = await askOverHttp();
    const started = Date.now();
    const answered = poll(key, approvalId, 50);
    await vi.waitFor(async () => expect(await waitingPolls(owner, sessionId)).toBe(1), { interval: 5 });

    expect((await decide(owner, approval, "deny")).status).toBe(200);
    const response = await answered;
    expect(response.status).toBe(200);
    expect(await json(response)).toMatchObject({ state: "denied", outcome: { outcome: "selected", optionId: "deny" } });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await waitingPolls(owner, sessionId)).toBe(0);
  });

  it("a deny's reason reaches the long poll waiting for it, and every later poll, in _meta.tapgate.message", async () => {
    const { owner, key, sessionId, approvalId, approval } = await askOverHttp();
    const answered = poll(key, approvalId, 50);
    await vi.waitFor(async () => expect(await waitingPolls(owner, sessionId)).toBe(1), { interval: 5 });
    const reason = "run the tests first, then ask again";
    const decided = await api(`/v1/approvals/${approval.id}/decision`, {
      method: "POST",
      cookie: owner.cookie,
      body: JSON.stringify({ optionId: "deny", requestHash: approval.requestHash, reason }),
    });
    expect(decided.status).toBe(200);
    const expected = {
      state: "denied",
      outcome: { outcome: "selected", optionId: "deny" },
      _meta: { tapgate: { approvalId, reason: "decided", message: reason } },
    };
    expect(await json(await answered)).toMatchObject(expected);
    expect(await json(await poll(key, approvalId))).toMatchObject(expected);
  });

  it("a long poll that runs out answers 202 and leaves no waiter", async () => {
    const { owner, key, sessionId, approvalId } = await askOverHttp();
    const response = await poll(key, approvalId, 1);
    expect(response.status).toBe(202);
    expect(await waitingPolls(owner, sessionId)).toBe(0);
  });

  it("DELETE cancels (the human then gets 410) and answers the same again, idempotently", async () => {
    const { owner, key, approvalId, approval } = await askOverHttp();
    const cancelled = {
      approvalId,
      state: "cancelled",
      reason: "agent_cancelled",
      outcome: { outcome: "cancelled" },
      _meta: { tapgate: { approvalId, reason: "agent_cancelled" } },
    };
    const first = await cancel(key, approvalId);
    expect(first.status).toBe(200);
    expect(await json(first)).toEqual(cancelled);
    expect((await decide(owner, approval, "allow")).status).toBe(410);
    expect(await json(await cancel(key, approvalId))).toEqual(cancelled);
    expect(await json(await poll(key, approvalId))).toEqual(cancelled);

    // Once a human has decided, DELETE changes nothing and repeats the human's answer.
    const other = await ask(key, approval.sessionId);
    const { approvalId: otherId } = await json<{ approvalId: string }>(other);
    await decide(owner, await read(owner, otherId), "allow");
    expect(await json(await cancel(key, otherId))).toMatchObject({
      state: "allowed",
      outcome: { outcome: "selected", optionId: "allow" },
    });
  });

  it("a request not polled for 60 s is denied agent_disconnected, with the fail-closed answer", async () => {
    const { owner, key, sessionId, approvalId, approval } = await askOverHttp();
    const lease = await leaseUntil(owner, sessionId, approvalId);
    expect(lease).toBe(approval.createdAt + LEASE_MS);
    const alarm = await runInDurableObject(gateStub(owner.teamId, sessionId), (_, state) => state.storage.getAlarm());
    expect(alarm).toBeLessThanOrEqual(lease);

    await sweep(owner, sessionId, lease - 1);
    expect((await poll(key, approvalId)).status).toBe(202); // not yet: and this poll renews the lease
    await sweep(owner, sessionId, Date.now() + LEASE_MS + 1_000);
    expect(await json(await poll(key, approvalId))).toEqual({
      approvalId,
      state: "denied",
      reason: "agent_disconnected",
      outcome: { outcome: "selected", optionId: "deny" },
      _meta: { tapgate: { approvalId, reason: "agent_disconnected" } },
    });
    expect((await decide(owner, approval, "allow")).status).toBe(410);
  });

  it("without a reject_once option the fail-closed answer is cancelled", async () => {
    const { owner, key, sessionId, approvalId } = await askOverHttp((sessionId) =>
      permissionParams(sessionId, { options: [{ optionId: "allow", name: "Allow", kind: "allow_once" }] }),
    );
    await sweep(owner, sessionId, Date.now() + LEASE_MS + 1_000);
    expect(await json(await poll(key, approvalId))).toMatchObject({
      reason: "agent_disconnected",
      outcome: { outcome: "cancelled" },
    });
  });

  it("every poll renews the lease", async () => {
    const { owner, key, sessionId, approvalId } = await askOverHttp();
    // As if 59 s had passed since the last poll: one second of lease left.
    await runInDurableObject(gateStub(owner.teamId, sessionId), (_, state) => {
      state.storage.sql.exec("UPDATE approvals SET lease_until = ? WHERE id = ?", Date.now() + 1_000, approvalId);
    });
    const before = Date.now();
    expect((await poll(key, approvalId)).status).toBe(202);
    expect(await leaseUntil(owner, sessionId, approvalId)).toBeGreaterThanOrEqual(before + LEASE_MS);

    await sweep(owner, sessionId, Date.now() + 2_000); // the old lease would have lapsed here
    expect((await poll(key, approvalId)).status).toBe(202);
  });

  it("survives a restart while its lease lasts, and can still be decided and polled", async () => {
    const { owner, key, sessionId, approvalId, approval } = await askOverHttp();
    const socket = await connectAgent(key, sessionId);
    await socket.ask(1, permissionParams(sessionId));

    await abortAllDurableObjects();
    await runDurableObjectAlarm(gateStub(owner.teamId, sessionId));
    expect((await poll(key, approvalId)).status).toBe(202);
    await flush(owner.teamId, sessionId);
    const { approvals } = await json<{ approvals: Approval[] }>(
      await api("/v1/approvals?state=resolved", { cookie: owner.cookie }),
    );
    const socketHeld = approvals.filter((a) => a.sessionId === sessionId);
    expect(socketHeld).toMatchObject([{ state: "denied", reason: "service_restart" }]);

    expect((await decide(owner, approval, "allow")).status).toBe(200);
    expect(await json(await poll(key, approvalId))).toMatchObject({
      state: "allowed",
      outcome: { outcome: "selected", optionId: "allow" },
    });
  });

  it("a socket closing in the same session leaves HTTP-held requests alone", async () => {
    const { owner, key, sessionId, approvalId } = await askOverHttp();
    const socket = await connectAgent(key, sessionId);
    await socket.ask(1, permissionParams(sessionId));
    await flush(owner.teamId, sessionId);
    const { approvals } = await json<{ approvals: Approval[] }>(
      await api("/v1/approvals?state=pending", { cookie: owner.cookie }),
    );
    const socketHeld = approvals.find((a) => a.sessionId === sessionId && a.id !== approvalId) as Approval;
    socket.ws.close(1000, "bye");
    expect(await settled(owner, socketHeld.id)).toMatchObject({ reason: "agent_disconnected" });
    expect((await poll(key, approvalId)).status).toBe(202);
  });

  it("unknown ids, another team's and another user's answer the same 404, on GET and DELETE", async () => {
    const { owner, key, approvalId } = await askOverHttp();
    const mallory = await signUp("Mallory");
    const { key: otherTeamKey } = await createKey(mallory);
    const colleagueKey = await colleagueOf(owner);
    const unknownId = `apr_${"0".repeat(64)}_${"A".repeat(22)}`;
    const attempts = [
      [key, unknownId],
      [key, "not-an-id"],
      [otherTeamKey, approvalId],
      [colleagueKey, approvalId],
    ] as const;
    const bodies = new Set<string>();
    for (const [k, id] of attempts) {
      for (const response of [await poll(k, id), await cancel(k, id)]) {
        expect(response.status).toBe(404);
        bodies.add(await response.text());
      }
    }
    expect(bodies.size).toBe(1);
    expect((await poll(key, approvalId)).status).toBe(202); // nothing changed
  });

  it("bad input gets a 400 that names the field", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("http");
    const cases: Array<[object | string, string]> = [
      [{ ...permissionParams(sessionId), options: undefined }, "options"],
      [permissionParams("another-session"), "sessionId"],
      [permissionParams(sessionId, { _meta: { tapgate: { timeoutMs: "soon" } } }), "_meta.tapgate.timeoutMs"],
      [
        { ...permissionParams(sessionId), options: [{ optionId: "a", name: "A", kind: "allow_everything" }] },
        "options.0.kind",
      ],
    ];
    for (const [body, field] of cases) {
      const response = await ask(key, sessionId, body as object);
      expect(response.status).toBe(400);
      const error = await json<{ error: string; message: string; issues: Array<{ path: string[] }> }>(response);
      expect(error.error).toBe("invalid_request");
      expect(error.issues.map((i) => i.path.join("."))).toContain(field);
    }
    const malformed = await asAgent(key, `/v1/agent/sessions/${sessionId}/permissions`, {
      method: "POST",
      body: "{not json",
    });
    expect(malformed.status).toBe(400);
    // A key twice in one object is refused as the socket refuses it, not read as the last one.
    const twice = JSON.stringify(permissionParams(sessionId)).replace(
      '"toolCall":{',
      '"toolCall":{"title":"ls","title":"rm",',
    );
    const duplicate = await asAgent(key, `/v1/agent/sessions/${sessionId}/permissions`, {
      method: "POST",
      body: twice,
    });
    expect(duplicate.status).toBe(400);
    expect(await json(duplicate)).toMatchObject({
      error: "invalid_request",
      message: 'duplicate key "title" in a JSON object',
    });
    let deep: object = {};
    for (let i = 0; i < 70; i++) deep = { deep };
    const tooDeep = await ask(key, sessionId, permissionParams(sessionId, { _meta: deep as Record<string, unknown> }));
    expect(tooDeep.status).toBe(400);
    const huge = permissionParams(sessionId, { _meta: { blob: "x".repeat(300 * 1024) } });
    expect((await ask(key, sessionId, huge)).status).toBe(413);
    for (const wait of ["51", "-1", "1.5", "soon"]) {
      const response = await poll(key, `apr_${"0".repeat(64)}_${"A".repeat(22)}`, wait as unknown as number);
      expect(response.status).toBe(400);
      expect((await json<{ issues: Array<{ path: string[] }> }>(response)).issues[0]?.path).toEqual(["wait"]);
    }
    const { approvals } = await json<{ approvals: Approval[] }>(await api("/v1/approvals", { cookie: owner.cookie }));
    expect(approvals).toEqual([]);
  });

  it("another user's session answers 403", async () => {
    const { owner, approvalId, sessionId } = await askOverHttp();
    const colleagueKey = await colleagueOf(owner);
    const response = await ask(colleagueKey, sessionId);
    expect(response.status).toBe(403);
    expect(await json(response)).toMatchObject({ error: "forbidden" });
    await flush(owner.teamId, sessionId);
    const { approvals } = await json<{ approvals: Approval[] }>(await api("/v1/approvals", { cookie: owner.cookie }));
    expect(approvals.map((a) => a.id)).toEqual([approvalId]);
  });

  it("refuses the 33rd pending request of a session (429), counted together with socket requests", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("http");
    for (let i = 0; i < 32; i++) expect((await ask(key, sessionId)).status).toBe(201);
    const refused = await ask(key, sessionId);
    expect(refused.status).toBe(429);
    expect(await json(refused)).toMatchObject({ error: "too_many_pending" });
    const socket = await connectAgent(key, sessionId);
    socket.sendRaw(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "session/request_permission",
        params: permissionParams(sessionId),
      }),
    );
    expect(await socket.next()).toMatchObject({ id: 1, error: { code: RPC_ERROR.tooManyPending } });
  }, 20_000); // 33 requests, each admitted by the team's hub first

  it("takes agent keys only: a sign-in cookie, no key or a bad key get 401", async () => {
    const { owner, approvalId, sessionId } = await askOverHttp();
    const attempts = [
      api(`/v1/agent/sessions/${sessionId}/permissions`, {
        method: "POST",
        cookie: owner.cookie,
        body: JSON.stringify(permissionParams(sessionId)),
      }),
      api(`/v1/agent/approvals/${approvalId}`, { cookie: owner.cookie }),
      api(`/v1/agent/approvals/${approvalId}`, { method: "DELETE", cookie: owner.cookie }),
      api("/v1/agent/me", { cookie: owner.cookie }),
      api("/v1/agent/me", { method: "DELETE", cookie: owner.cookie }),
      poll(`tg_${"x".repeat(43)}`, approvalId),
      poll("nonsense", approvalId),
    ];
    expect((await Promise.all(attempts)).map((r) => r.status)).toEqual([401, 401, 401, 401, 401, 401, 401]);
    expect((await read(owner, approvalId)).state).toBe("pending");
  });

  it("GET /v1/agent/me says whom the key speaks for; DELETE gives the key up like a revocation", async () => {
    const { owner, key, keyId, sessionId, approvalId } = await askOverHttp();
    const me = await asAgent(key, "/v1/agent/me");
    expect(me.status).toBe(200);
    expect(await json(me)).toEqual({
      team: { id: owner.teamId, name: "Ada's team" },
      user: { id: owner.userId, name: "Ada", email: owner.email },
      key: { id: keyId, prefix: expect.any(String), label: "laptop" },
    });
    expect(
      key.startsWith((await json<{ key: { prefix: string } }>(await asAgent(key, "/v1/agent/me"))).key.prefix),
    ).toBe(true);

    const socket = await connectAgent(key, sessionId);
    const { key: otherKey } = await createKey(owner, "other");
    const waiting = poll(otherKey, approvalId, 50); // another key of the same owner may poll it too
    const revoked = await asAgent(key, "/v1/agent/me", { method: "DELETE" });
    expect(revoked.status).toBe(200);
    expect(await json(revoked)).toMatchObject({ id: keyId, deniedRequests: 1 });
    expect(await json(await waiting)).toMatchObject({
      state: "denied",
      reason: "key_revoked",
      outcome: { outcome: "selected", optionId: "deny" },
    });
    expect((await socket.closed).code).toBe(4001);
    expect((await asAgent(key, "/v1/agent/me")).status).toBe(401);
    expect((await ask(key, sessionId)).status).toBe(401);
    expect((await asAgent(otherKey, "/v1/agent/me")).status).toBe(200);
    const { results } = await env.DB.prepare("SELECT actor FROM audit_log WHERE subject = ? AND action = 'key.revoked'")
      .bind(keyId)
      .all<{ actor: string }>();
    expect(results).toEqual([{ actor: `key:${keyId}` }]);
  });

  it("an object from a build before versioned storage gains the new columns and answers polls", async () => {
    const { owner, key, sessionId, approvalId, approval } = await askOverHttp();
    await decide(owner, approval, "allow");
    await runInDurableObject(gateStub(owner.teamId, sessionId), (_, state) => {
      state.storage.sql.exec(`ALTER TABLE approvals DROP COLUMN lease_until;
        ALTER TABLE approvals DROP COLUMN answer;
        DELETE FROM meta WHERE k = 'schema_version';`);
    });
    await abortAllDurableObjects();
    expect(await json(await poll(key, approvalId))).toMatchObject({
      state: "allowed",
      outcome: { outcome: "selected", optionId: "allow" },
    });
    const version = await runInDurableObject(gateStub(owner.teamId, sessionId), (_, state) => {
      return state.storage.sql.exec("SELECT v FROM meta WHERE k = 'schema_version'").one().v;
    });
    expect(version).toBe(String(SCHEMA_VERSION));
  });
});
