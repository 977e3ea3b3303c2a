/**
 * Elicitations (ACP `elicitation/create`) at the gate: held like permission requests, answered
 * once with the human's action (and a form's content, checked against its schema), and
 * `{action: "cancel"}` on every other end.
 */
import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { RPC_ERROR } from "../../sdk/src/protocol";
import {
  type AgentSocket,
  api,
  connectAgent,
  createKey,
  decide,
  flush,
  gateStub,
  json,
  type Member,
  ORIGIN,
  pendingApprovals,
  settled,
  signUp,
  unique,
} from "./helpers";

const FORM = {
  type: "object",
  properties: {
    name: { type: "string", title: "Project name", minLength: 1, maxLength: 20 },
    port: { type: "integer", title: "Port", minimum: 1024, maximum: 65535, default: 3000 },
    strategy: {
      type: "string",
      oneOf: [
        { const: "safe", title: "Conservative" },
        { const: "bold", title: "Bold" },
      ],
    },
    logging: { type: "boolean", default: true },
  },
  required: ["name", "port"],
};

const formParams = (sessionId: string, extra: object = {}) => ({
  sessionId,
  mode: "form",
  message: "How should I set the project up?",
  requestedSchema: FORM,
  ...extra,
});
const urlParams = (sessionId: string, elicitationId = "oauth-1") => ({
  sessionId,
  mode: "url",
  message: "Authorize GitHub access",
  url: "https://github.com/login/oauth/authorize?client_id=abc&state=xyz",
  elicitationId,
});

function answer(member: Member, approval: Approval, body: object) {
  return api(`/v1/approvals/${approval.id}/decision`, {
    method: "POST",
    cookie: member.cookie,
    body: JSON.stringify({ requestHash: approval.requestHash, ...body }),
  });
}

/** A member, a key, a socket and one held elicitation. */
async function elicitOnce(params: (sessionId: string) => object = formParams) {
  const owner = await signUp();
  const { key, id: keyId } = await createKey(owner);
  const sessionId = unique("elicit");
  const agent = await connectAgent(key, sessionId);
  await agent.send({ jsonrpc: "2.0", id: "e1", method: "elicitation/create", params: params(sessionId) });
  const [approval] = await pendingApprovals(owner, sessionId);
  if (!approval) throw new Error("the elicitation did not become a pending approval");
  return { owner, key, keyId, sessionId, agent, approval };
}

const result = async (agent: AgentSocket) =>
  (await agent.next<{ id: unknown; result: Record<string, unknown> }>()).result;

describe("elicitation/create over the socket", () => {
  it("is held as an approval of type elicitation, its form whole in the snapshot and the hash", async () => {
    const { approval } = await elicitOnce();
    expect(approval).toMatchObject({ type: "elicitation", state: "pending", options: [], action: null });
    expect(approval.snapshot.elicitation).toMatchObject({ mode: "form", message: "How should I set the project up?" });
    expect(Object.keys(approval.snapshot.elicitation?.requestedSchema?.properties ?? {})).toEqual([
      "name",
      "port",
      "strategy",
      "logging",
    ]);
    expect(approval.requestHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("accept with content that fits: the agent gets exactly that content, once", async () => {
    const { owner, agent, approval } = await elicitOnce();
    const content = { name: "demo", port: 8080, strategy: "safe" };
    const decided = await answer(owner, approval, { action: "accept", content });
    expect(decided.status).toBe(200);
    expect(await json(decided)).toMatchObject({ state: "allowed", reason: "decided", action: "accept" });
    const got = await agent.next<{ id: unknown; result: Record<string, unknown> }>();
    expect(got.id).toBe("e1");
    expect(got.result).toMatchObject({ action: "accept", content, _meta: { tapgate: { approvalId: approval.id } } });
    expect((got.result._meta as { tapgate: { decidedBy: { name: string } } }).tapgate.decidedBy.name).toBe("Ada");
    // The same answer again is a repeat: 200, nothing sent twice. Another answer is a conflict.
    expect((await answer(owner, approval, { action: "accept", content })).status).toBe(200);
    expect((await answer(owner, approval, { action: "decline" })).status).toBe(409);
    await agent.barrier();
    expect(agent.pending()).toBe(0);
  });

  it("content that does not fit is 400 invalid_content naming the field; the request stays pending", async () => {
    const { owner, approval, sessionId } = await elicitOnce();
    const refused = async (body: object) => {
      const r = await answer(owner, approval, body);
      expect(r.status).toBe(400);
      return json<{ error: string; field: string; message: string }>(r);
    };
    expect(await refused({ action: "accept", content: { name: "demo", port: 80 } })).toMatchObject({
      error: "invalid_content",
      field: "port",
      message: "Port must be at least 1024",
    });
    expect(await refused({ action: "accept", content: { port: 3000 } })).toMatchObject({ field: "name" });
    expect(await refused({ action: "accept", content: { name: "x", port: 3000, strategy: "Bold" } })).toMatchObject({
      field: "strategy",
    });
    expect(await refused({ action: "accept", content: { name: "x", port: 3000, extra: true } })).toMatchObject({
      field: "extra",
    });
    expect(await refused({ action: "decline", content: { name: "x" } })).toMatchObject({ field: "content" });
    // An option is not an answer to a question; a made-up action is not an answer at all.
    expect(await json(await decide(owner, approval, "allow"))).toMatchObject({ error: "option_not_offered" });
    expect((await answer(owner, approval, { action: "maybe" })).status).toBe(400);
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(1);
  });

  it("decline and cancel reach the agent without content", async () => {
    for (const action of ["decline", "cancel"] as const) {
      const { owner, agent, approval } = await elicitOnce();
      const decided = await json<Approval>(await answer(owner, approval, { action }));
      expect(decided).toMatchObject({ state: "denied", reason: "decided", action });
      const got = await result(agent);
      expect(got.action).toBe(action);
      expect(got).not.toHaveProperty("content");
    }
  });

  it("two devices answering at the same moment: one 200, one 409, one answer to the agent", async () => {
    const { owner, agent, approval } = await elicitOnce();
    const [a, b] = await Promise.all([
      answer(owner, approval, { action: "accept", content: { name: "one", port: 3000 } }),
      answer(owner, approval, { action: "decline" }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const got = await result(agent);
    expect(got.action).toBe(a.status === 200 ? "accept" : "decline");
    await agent.barrier();
    expect(agent.pending()).toBe(0);
  });

  it("a stale requestHash is 409 request_changed", async () => {
    const { owner, approval } = await elicitOnce();
    const r = await answer(owner, approval, { action: "decline", requestHash: "0".repeat(64) });
    expect(r.status).toBe(409);
    expect(await json(r)).toMatchObject({ error: "request_changed" });
  });

  it("fails closed with {action: cancel}: expiry, disconnect, revocation, restart, the agent's own cancels", async () => {
    const expired = await elicitOnce();
    await runInDurableObject(gateStub(expired.owner.teamId, expired.sessionId), (gate) =>
      gate.sweep(expired.approval.expiresAt),
    );
    expect(await result(expired.agent)).toMatchObject({ action: "cancel", _meta: { tapgate: { reason: "expired" } } });
    expect((await answer(expired.owner, expired.approval, { action: "decline" })).status).toBe(410);

    const disconnected = await elicitOnce();
    disconnected.agent.ws.close(1000, "bye");
    expect(await settled(disconnected.owner, disconnected.approval.id)).toMatchObject({
      state: "denied",
      reason: "agent_disconnected",
      action: null,
    });

    const revoked = await elicitOnce();
    await api(`/v1/keys/${revoked.keyId}`, { method: "DELETE", cookie: revoked.owner.cookie });
    expect(await result(revoked.agent)).toMatchObject({
      action: "cancel",
      _meta: { tapgate: { reason: "key_revoked" } },
    });

    const withdrawn = await elicitOnce();
    await withdrawn.agent.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: "e1" } });
    expect(await result(withdrawn.agent)).toMatchObject({ action: "cancel" });

    const cancelled = await elicitOnce();
    await cancelled.agent.send({
      jsonrpc: "2.0",
      method: "session/cancel",
      params: { sessionId: cancelled.sessionId },
    });
    expect(await result(cancelled.agent)).toMatchObject({
      action: "cancel",
      _meta: { tapgate: { reason: "session_cancelled" } },
    });
  });

  it("after a restart nothing is left pending: service_restart, and the record says no action", async () => {
    const { owner, sessionId, approval } = await elicitOnce();
    await abortAllDurableObjects();
    await runDurableObjectAlarm(gateStub(owner.teamId, sessionId));
    expect(await settled(owner, approval.id)).toMatchObject({
      state: "denied",
      reason: "service_restart",
      action: null,
    });
  });

  it("refuses what it would not render: request scope, arrays, plain http, user info in the URL", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("elicit");
    const agent = await connectAgent(key, sessionId);
    const bad = [
      { requestId: 1, mode: "form", message: "?", requestedSchema: FORM },
      formParams(sessionId, { requestedSchema: { type: "object", properties: { tags: { type: "array" } } } }),
      { ...urlParams(sessionId), url: "http://example.com/login" },
      { ...urlParams(sessionId), url: "https://github.com@evil.example/login" },
      formParams("another-session"),
    ];
    for (const [i, params] of bad.entries()) {
      await agent.send({ jsonrpc: "2.0", id: `bad-${i}`, method: "elicitation/create", params });
      expect(await agent.next()).toMatchObject({ id: `bad-${i}`, error: { code: RPC_ERROR.invalidParams } });
    }
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(0);
  });
});

describe("URL mode", () => {
  it("shows the URL whole; elicitation/complete closes the card and answers cancel", async () => {
    const { owner, agent, approval, sessionId } = await elicitOnce(urlParams);
    expect(approval.snapshot.elicitation).toMatchObject({
      mode: "url",
      url: "https://github.com/login/oauth/authorize?client_id=abc&state=xyz",
      elicitationId: "oauth-1",
    });
    await agent.send({ jsonrpc: "2.0", method: "elicitation/complete", params: { elicitationId: "other" } });
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(1);
    await agent.send({ jsonrpc: "2.0", method: "elicitation/complete", params: { elicitationId: "oauth-1" } });
    expect(await result(agent)).toMatchObject({ action: "cancel", _meta: { tapgate: { reason: "agent_cancelled" } } });
    expect(await settled(owner, approval.id)).toMatchObject({ state: "cancelled", reason: "agent_cancelled" });
  });

  it("accept takes no content", async () => {
    const { owner, agent, approval } = await elicitOnce(urlParams);
    const refused = await answer(owner, approval, { action: "accept", content: { x: 1 } });
    expect(await json(refused)).toMatchObject({ error: "invalid_content", field: "content" });
    expect((await answer(owner, approval, { action: "accept" })).status).toBe(200);
    expect(await result(agent)).toMatchObject({ action: "accept" });
  });
});

describe("over HTTP long-poll", () => {
  const asAgent = (key: string, path: string, init: RequestInit = {}) =>
    SELF.fetch(`${ORIGIN}${path}`, {
      ...init,
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    });

  it("is held, polled and answered with the ACP elicitation result", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("elicit-http");
    const created = await asAgent(key, `/v1/agent/sessions/${sessionId}/elicitations`, {
      method: "POST",
      body: JSON.stringify(formParams(sessionId)),
    });
    expect(created.status).toBe(201);
    const { approvalId } = await json<{ approvalId: string }>(created);
    expect((await asAgent(key, `/v1/agent/approvals/${approvalId}`)).status).toBe(202);
    const approval = await json<Approval>(await api(`/v1/approvals/${approvalId}`, { cookie: owner.cookie }));
    expect((await answer(owner, approval, { action: "accept", content: { name: "svc", port: 4000 } })).status).toBe(
      200,
    );
    const done = await asAgent(key, `/v1/agent/approvals/${approvalId}`);
    expect(done.status).toBe(200);
    expect(await json(done)).toMatchObject({
      approvalId,
      state: "allowed",
      reason: "decided",
      action: "accept",
      content: { name: "svc", port: 4000 },
    });
  });

  it("an invalid elicitation is 400 naming the field; a lease that lapses answers cancel", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("elicit-http");
    const bad = await asAgent(key, `/v1/agent/sessions/${sessionId}/elicitations`, {
      method: "POST",
      body: JSON.stringify({ ...urlParams(sessionId), url: "ftp://x" }),
    });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await json(bad))).toContain('"url"');
    const created = await asAgent(key, `/v1/agent/sessions/${sessionId}/elicitations`, {
      method: "POST",
      body: JSON.stringify(urlParams(sessionId)),
    });
    const { approvalId } = await json<{ approvalId: string }>(created);
    await runInDurableObject(gateStub(owner.teamId, sessionId), (gate) => gate.sweep(Date.now() + 61_000));
    const done = await json(await asAgent(key, `/v1/agent/approvals/${approvalId}`));
    expect(done).toMatchObject({ state: "denied", reason: "agent_disconnected", action: "cancel" });
    expect(done).not.toHaveProperty("outcome");
  });
});

describe("lists and pushes", () => {
  it("the D1 index and history carry the type and action, never the content", async () => {
    const { owner, agent, approval, sessionId } = await elicitOnce();
    await answer(owner, approval, { action: "accept", content: { name: "secret-looking", port: 3000 } });
    await result(agent);
    await flush(owner.teamId, sessionId);
    const { approvals } = await json<{ approvals: Approval[] }>(
      await api("/v1/approvals?state=resolved", { cookie: owner.cookie }),
    );
    const listed = approvals.find((a) => a.id === approval.id);
    expect(listed).toMatchObject({ type: "elicitation", action: "accept", state: "allowed" });
    expect(JSON.stringify(approvals)).not.toContain("secret-looking");
  });
});
