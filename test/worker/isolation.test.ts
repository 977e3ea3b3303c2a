import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { newApiKey } from "../../worker/crypto";
import { api, askOnce, connectAgent, createKey, decide, json, ORIGIN, pendingApprovals, signUp } from "./helpers";

describe("tenant isolation", () => {
  it("another team's cookie gets 404 on every approval and key route, and changes nothing", async () => {
    const a = await askOnce();
    const b = await signUp("Mallory");
    const { id: aKeyId } = await createKey(a.owner, "ci");

    expect((await api(`/v1/approvals/${a.approval.id}`, { cookie: b.cookie })).status).toBe(404);
    expect((await decide(b, a.approval, "allow")).status).toBe(404);
    const { approval } = a;
    const batch = await api("/v1/approvals/decisions", {
      method: "POST",
      cookie: b.cookie,
      body: JSON.stringify({
        decisions: [{ approvalId: approval.id, optionId: "allow", requestHash: approval.requestHash }],
      }),
    });
    expect(await json(batch)).toEqual({
      results: [{ approvalId: approval.id, status: 404, error: "not_found", message: "no such approval" }],
    });
    expect((await api(`/v1/approvals/${approval.id}/claim`, { method: "POST", cookie: b.cookie })).status).toBe(404);
    expect((await api(`/v1/keys/${aKeyId}`, { method: "DELETE", cookie: b.cookie })).status).toBe(404);
    for (const scope of ["mine", "team"]) {
      for (const state of ["pending", "resolved"]) {
        const { approvals } = await json<{ approvals: Approval[] }>(
          await api(`/v1/approvals?state=${state}&scope=${scope}`, { cookie: b.cookie }),
        );
        expect(approvals).toEqual([]);
      }
    }
    const { keys } = await json<{ keys: Array<{ id: string }> }>(await api("/v1/keys", { cookie: b.cookie }));
    expect(keys).toEqual([]);

    // Nothing changed for team A: the request still waits, the key still works.
    expect(await pendingApprovals(a.owner, a.sessionId)).toHaveLength(1);
    const { keys: aKeys } = await json<{ keys: Array<{ id: string; revokedAt: number | null }> }>(
      await api("/v1/keys", { cookie: a.owner.cookie }),
    );
    expect(aKeys.find((k) => k.id === aKeyId)?.revokedAt).toBeNull();
    expect(a.agent.pending()).toBe(0);
  });

  it("an id that does not exist answers exactly like another team's id", async () => {
    const a = await askOnce();
    const b = await signUp("Mallory");
    const foreign = await api(`/v1/approvals/${a.approval.id}`, { cookie: b.cookie });
    const fake = await api(`/v1/approvals/apr_${"0".repeat(64)}_${"A".repeat(22)}`, { cookie: b.cookie });
    const garbage = await api("/v1/approvals/not-an-id", { cookie: b.cookie });
    expect([foreign.status, fake.status, garbage.status]).toEqual([404, 404, 404]);
    expect(await json(foreign)).toEqual(await json(garbage));
  });

  it("an agent key never reaches the human API (403) and can never decide", async () => {
    const { key, approval, agent } = await askOnce();
    const asAgent = (path: string, init: RequestInit = {}) =>
      SELF.fetch(`${ORIGIN}${path}`, {
        ...init,
        headers: { Authorization: `Bearer ${key}`, Origin: ORIGIN, "Content-Type": "application/json" },
      });
    const attempts = [
      await asAgent("/v1/approvals"),
      await asAgent(`/v1/approvals/${approval.id}`),
      await asAgent(`/v1/approvals/${approval.id}/decision`, {
        method: "POST",
        body: JSON.stringify({ optionId: "allow", requestHash: approval.requestHash }),
      }),
      await asAgent("/v1/keys"),
      await asAgent("/v1/keys", { method: "POST", body: JSON.stringify({ label: "more" }) }),
      await asAgent("/v1/me"),
    ];
    expect(attempts.map((r) => r.status)).toEqual([403, 403, 403, 403, 403, 403]);
    // The agent can also not answer its own request over its socket: a response frame is ignored.
    await agent.send({ jsonrpc: "2.0", id: 1, result: { outcome: { outcome: "selected", optionId: "allow" } } });
  });

  it("a key of another user cannot join a session it does not own (403), nor another team's", async () => {
    const a = await askOnce();
    const b = await signUp("Mallory");
    const { key: bKey } = await createKey(b);
    // Same session id in team B is a different object: B's agent cannot see or answer A's request.
    const bAgent = await connectAgent(bKey, a.sessionId);
    await bAgent.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: a.sessionId } });
    expect(await pendingApprovals(a.owner, a.sessionId)).toHaveLength(1);
  });

  it("a key of another member of the same team cannot join a session it does not own (403)", async () => {
    const a = await askOnce();
    // A second member of A's team (invites come with the dashboard; the row is what matters here).
    const now = Date.now();
    const { key, hash, prefix } = newApiKey();
    await env.DB.batch([
      env.DB.prepare("INSERT INTO users (id, email, name, created_at) VALUES ('usr_colleague', ?, 'Col', ?)").bind(
        `${a.sessionId}@example.com`,
        now,
      ),
      env.DB.prepare(
        "INSERT INTO memberships (team_id, user_id, role, created_at) VALUES (?, 'usr_colleague', 'approver', ?)",
      ).bind(a.owner.teamId, now),
      env.DB.prepare(
        "INSERT INTO api_keys (id, team_id, user_id, key_hash, prefix, label, created_at) VALUES ('key_colleague', ?, 'usr_colleague', ?, ?, 'x', ?)",
      ).bind(a.owner.teamId, hash, prefix, now),
    ]);
    await expect(connectAgent(key, a.sessionId)).rejects.toThrow(/403/);
    expect(await pendingApprovals(a.owner, a.sessionId)).toHaveLength(1);
  });

  it("an unauthenticated caller gets 401 and a bad key gets 401 before any upgrade", async () => {
    expect((await api("/v1/approvals")).status).toBe(401);
    const upgrade = (auth?: string) =>
      SELF.fetch(`${ORIGIN}/v1/agent/sessions/s1`, {
        headers: { Upgrade: "websocket", ...(auth ? { Authorization: auth } : {}) },
      });
    expect((await upgrade()).status).toBe(401);
    expect((await upgrade(`Bearer tg_${"x".repeat(43)}`)).status).toBe(401);
    expect((await upgrade("Bearer nonsense")).status).toBe(401);
    const plain = await SELF.fetch(`${ORIGIN}/v1/agent/sessions/s1`);
    expect(plain.status).toBe(426);
    const badId = await SELF.fetch(`${ORIGIN}/v1/agent/sessions/${"x".repeat(129)}`, {
      headers: { Upgrade: "websocket" },
    });
    expect(badId.status).toBe(400);
  });
});
