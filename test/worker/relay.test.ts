import { abortAllDurableObjects, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { CLOSE_SPREAD_MS } from "../../worker/gate/closed-sockets";
import {
  api,
  askOnce,
  connectAgent,
  createKey,
  decide,
  flush,
  gateStub,
  json,
  pendingApprovals,
  permissionParams,
  settled,
  signUp,
  unique,
} from "./helpers";

describe("the blocking approval relay", () => {
  it("holds a request until a human allows it, then answers the agent with the chosen option", async () => {
    const { owner, agent, approval } = await askOnce();
    expect(agent.pending()).toBe(0); // still waiting: an approval is a blocking request
    expect(approval.state).toBe("pending");
    expect(approval.options.map((o) => o.optionId)).toEqual(["allow", "deny"]); // once-only policy hides "always"

    const response = await decide(owner, approval, "allow");
    expect(response.status).toBe(200);
    const decided = await json<Approval>(response);
    expect(decided).toMatchObject({ state: "allowed", reason: "decided", optionId: "allow" });
    expect(decided.decidedBy).toMatchObject({ userId: owner.userId, device: "web" });
    // ACP `_meta` on the result says which approval and who decided: name and device, no user id.
    expect(await agent.next()).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: {
        outcome: { outcome: "selected", optionId: "allow" },
        _meta: { tapgate: { approvalId: approval.id, reason: "decided", decidedBy: { name: "Ada", device: "web" } } },
      },
    });
  });

  it("answers a deny with the reject option, and says who denied it from which device", async () => {
    const { owner, agent, approval } = await askOnce(await signUp("Sam"));
    const denied = await api(`/v1/approvals/${approval.id}/decision`, {
      method: "POST",
      cookie: owner.cookie,
      headers: { "X-Tapgate-Device": encodeURIComponent("Pixel 8 — Zoë") },
      body: JSON.stringify({ optionId: "deny", requestHash: approval.requestHash }),
    });
    expect(denied.status).toBe(200);
    expect(await agent.next()).toMatchObject({
      id: 1,
      result: {
        outcome: { outcome: "selected", optionId: "deny" },
        _meta: {
          tapgate: { approvalId: approval.id, reason: "decided", decidedBy: { name: "Sam", device: "Pixel 8 — Zoë" } },
        },
      },
    });
    const read = await json<Approval>(await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }));
    expect(read).toMatchObject({ state: "denied", reason: "decided", optionId: "deny" });
  });

  it("shows the snapshot humans see, hashed, with session metadata from hello and tool calls from updates", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("sess");
    const agent = await connectAgent(key, sessionId);
    await agent.send({
      jsonrpc: "2.0",
      method: "_tapgate/hello",
      params: { title: "fix flaky test", agent: { name: "my-agent", version: "1.0" }, host: "devbox", cwd: "/src" },
    });
    const diff = { type: "diff", path: "/src/a.ts", oldText: "a", newText: "b" };
    await agent.send({
      jsonrpc: "2.0",
      method: "session/update",
      params: {
        sessionId,
        update: { sessionUpdate: "tool_call", toolCallId: "t1", title: "Edit a.ts", kind: "edit", content: [diff] },
      },
    });
    await agent.send({
      jsonrpc: "2.0",
      method: "session/update",
      params: {
        sessionId,
        update: { sessionUpdate: "tool_call_update", toolCallId: "t1", locations: [{ path: "/src/a.ts", line: 3 }] },
      },
    });
    await agent.ask(
      "req-1",
      permissionParams(sessionId, { toolCall: { toolCallId: "t1" }, _meta: { policy: "edits need approval" } }),
    );
    const [approval] = await pendingApprovals(owner, sessionId);
    const read = await json<Approval>(await api(`/v1/approvals/${approval?.id}`, { cookie: owner.cookie }));
    expect(read.snapshot).toEqual({
      toolCall: {
        toolCallId: "t1",
        title: "Edit a.ts",
        kind: "edit",
        content: [diff],
        locations: [{ path: "/src/a.ts", line: 3 }],
      },
      session: { title: "fix flaky test", agent: { name: "my-agent", version: "1.0" }, host: "devbox", cwd: "/src" },
      meta: { policy: "edits need approval" },
    });
    expect(read.requestHash).toMatch(/^[0-9a-f]{64}$/);
    expect(read.expiresAt - read.createdAt).toBe(10 * 60_000);
  });

  it("a session/update decorates only requests asked on its own socket", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("sess");
    const [honest, other] = [await connectAgent(key, sessionId), await connectAgent(key, sessionId)];
    const update = (toolCallId: string, title: string) => ({
      jsonrpc: "2.0",
      method: "session/update",
      params: { sessionId, update: { sessionUpdate: "tool_call", toolCallId, title: title, kind: "read" } },
    });
    // The other socket describes the honest socket's tool call as harmless, and its own too.
    await other.send(update("t1", "Read README"));
    await other.send(update("t2", "Read notes"));
    await honest.ask("h", permissionParams(sessionId, { toolCall: { toolCallId: "t1" } }));
    await other.ask("o", permissionParams(sessionId, { toolCall: { toolCallId: "t2" } }));
    const byId = new Map(
      (await pendingApprovals(owner, sessionId)).map((a) => [
        (a.snapshot.toolCall as { toolCallId: string }).toolCallId,
        a,
      ]),
    );
    expect(byId.get("t1")?.snapshot.toolCall).toEqual({ toolCallId: "t1" });
    expect(byId.get("t2")?.snapshot.toolCall).toEqual({ toolCallId: "t2", title: "Read notes", kind: "read" });
  });

  it("$/cancel_request answers that request cancelled and leaves the others waiting", async () => {
    const { owner, agent, sessionId, approval } = await askOnce();
    await agent.ask("two", permissionParams(sessionId));
    await agent.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 1 } });
    expect(await agent.next()).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: {
        outcome: { outcome: "cancelled" },
        _meta: { tapgate: { approvalId: approval.id, reason: "agent_cancelled" } },
      },
    });
    const read = await json<Approval>(await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }));
    expect(read).toMatchObject({ state: "cancelled", reason: "agent_cancelled" });
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(1);
    expect((await decide(owner, approval, "allow")).status).toBe(410);
  });

  it("session/cancel answers every pending request of the session cancelled", async () => {
    const { owner, agent, sessionId } = await askOnce();
    await agent.ask(2, permissionParams(sessionId));
    await agent.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId } });
    const answers = [await agent.next(), await agent.next()];
    expect(answers.map((a) => a.id).sort()).toEqual([1, 2]);
    for (const a of answers) {
      expect(a.result).toMatchObject({
        outcome: { outcome: "cancelled" },
        _meta: { tapgate: { reason: "session_cancelled" } },
      });
    }
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(0);
  });

  it("a socket that closes denies its own pending requests at once, and only its own", async () => {
    const { owner, key, agent, sessionId, approval } = await askOnce();
    const other = await connectAgent(key, sessionId);
    await other.ask(1, permissionParams(sessionId));
    agent.ws.close(1000, "bye");
    const read = await settled(owner, approval.id);
    expect(read).toMatchObject({ state: "denied", reason: "agent_disconnected" });
    const left = await pendingApprovals(owner, sessionId);
    expect(left).toHaveLength(1);
    expect((await decide(owner, left[0] as Approval, "allow")).status).toBe(200);
    expect(await other.next()).toMatchObject({
      id: 1,
      result: { outcome: { outcome: "selected", optionId: "allow" } },
    });
  });

  it("a dropped socket's end reaches D1 by itself within the close spread, with nothing else asking the gate", async () => {
    const { agent, approval } = await askOnce();
    agent.ws.close(1000, "bye");
    await agent.closed;
    const row = () => env.DB.prepare("SELECT state, reason FROM approvals WHERE id = ?").bind(approval.id).first();
    await vi.waitFor(async () => expect(await row()).toEqual({ state: "denied", reason: "agent_disconnected" }), {
      timeout: CLOSE_SPREAD_MS + 3_000,
      interval: 50,
    });
  });

  it("a gate that goes away between a socket's close and its end's moment ends the request at its next start", async () => {
    const { owner, agent, sessionId, approval } = await askOnce();
    agent.ws.close(1000, "bye");
    await agent.closed;
    await abortAllDurableObjects(); // usually before the end's moment (at least 300 ms after the close)
    await runDurableObjectAlarm(gateStub(owner.teamId, sessionId)); // the alarm set for the held request
    const read = await json<Approval>(await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }));
    expect(read.state).toBe("denied");
    expect(["service_restart", "agent_disconnected"]).toContain(read.reason);
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(0);
  });

  it("a read and a decision right after the close, before its end's moment, find the request ended: 410", async () => {
    const { owner, agent, approval } = await askOnce();
    agent.ws.close(1000, "bye");
    await agent.closed; // the gate answered the close: its handler ran, the end waits for its moment
    const read = await json<Approval>(await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }));
    expect(read).toMatchObject({ state: "denied", reason: "agent_disconnected" });
    const late = await decide(owner, approval, "allow");
    expect(late.status).toBe(410);
    expect(await json(late)).toMatchObject({
      error: "already_resolved",
      approval: { state: "denied", reason: "agent_disconnected" },
    });
  });

  it("expires a request by alarm with the fail-closed answer", async () => {
    const { owner, agent, sessionId, approval } = await askOnce();
    const stub = gateStub(owner.teamId, sessionId);
    expect(await runInDurableObject(stub, (_, state) => state.storage.getAlarm())).toBeLessThanOrEqual(
      approval.expiresAt,
    );
    await runInDurableObject(stub, (gate) => gate.sweep(approval.expiresAt));
    expect(await agent.next()).toMatchObject({ id: 1, result: { outcome: { outcome: "selected", optionId: "deny" } } });
    const read = await json<Approval>(await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }));
    expect(read).toMatchObject({ state: "expired", reason: "expired" });
    expect((await decide(owner, approval, "allow")).status).toBe(410);
  });

  it("a decision that arrives after the lifetime ended, before the alarm ran, answers 410", async () => {
    const { owner, agent, sessionId, approval } = await askOnce();
    // The request's time is up, but its alarm has not fired yet.
    await runInDurableObject(gateStub(owner.teamId, sessionId), (_, state) => {
      state.storage.sql.exec("UPDATE approvals SET expires_at = ? WHERE id = ?", Date.now() - 1, approval.id);
    });
    const late = await decide(owner, approval, "allow");
    expect(late.status).toBe(410);
    expect(await json(late)).toMatchObject({ approval: { state: "expired", reason: "expired" } });
    expect(await agent.next()).toMatchObject({ id: 1, result: { outcome: { outcome: "selected", optionId: "deny" } } });
  });

  it("an agent may ask for a shorter lifetime, never a longer one", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("sess");
    const agent = await connectAgent(key, sessionId);
    const short = permissionParams(sessionId, { _meta: { tapgate: { timeoutMs: 5_000 } } });
    const long = permissionParams(sessionId, { _meta: { tapgate: { timeoutMs: 60 * 60_000 } } });
    await agent.ask(1, short);
    await agent.ask(2, long);
    const lifetimes = (await pendingApprovals(owner, sessionId))
      .map((a) => a.expiresAt - a.createdAt)
      .sort((a, b) => a - b);
    expect(lifetimes).toEqual([5_000, 10 * 60_000]);
  });

  it("closes a half-open socket (no heartbeat for two intervals) and denies its requests", async () => {
    const { owner, agent, sessionId, approval } = await askOnce();
    await runInDurableObject(gateStub(owner.teamId, sessionId), (gate) => gate.sweep(Date.now() + 31_000));
    const closed = await agent.closed;
    expect(closed.code).toBe(4000);
    const read = await json<Approval>(await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }));
    expect(read).toMatchObject({ state: "denied", reason: "agent_disconnected" });
  });

  it("answers ping with pong and keeps a socket heard from within two intervals", async () => {
    const { owner, agent, sessionId } = await askOnce();
    agent.sendRaw("ping");
    expect(await agent.next()).toBe("pong");
    await runInDurableObject(gateStub(owner.teamId, sessionId), (gate) => gate.sweep(Date.now() + 29_000));
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(1);
  });

  it("after a restart nothing is left pending: service_restart", async () => {
    const { owner, sessionId, approval } = await askOnce();
    await abortAllDurableObjects();
    const stub = gateStub(owner.teamId, sessionId);
    await runDurableObjectAlarm(stub); // the alarm that was set for expiry wakes the new instance
    const read = await json<Approval>(await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }));
    expect(read).toMatchObject({ state: "denied", reason: "service_restart" });
    await flush(owner.teamId, sessionId);
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(0);
  });

  it("two devices deciding at the same moment: one 200, one 409, one answer to the agent", async () => {
    const { owner, agent, approval } = await askOnce();
    const [a, b] = await Promise.all([decide(owner, approval, "allow"), decide(owner, approval, "deny")]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const winner = a.status === 200 ? "allow" : "deny";
    const loser = await json<{ approval: Approval }>(a.status === 409 ? a : b);
    expect(loser.approval.optionId).toBe(winner);
    expect(await agent.next()).toMatchObject({ id: 1, result: { outcome: { optionId: winner } } });
    await agent.barrier(); // no second answer arrived before the barrier reply
  });

  it("refuses an unoffered option (400) and a changed hash (409) without resolving", async () => {
    const { owner, agent, approval } = await askOnce();
    expect((await decide(owner, approval, "always")).status).toBe(400); // hidden by the once-only policy
    expect((await decide(owner, approval, "nope")).status).toBe(400);
    const changed = await decide(owner, approval, "allow", "0".repeat(64));
    expect(changed.status).toBe(409);
    expect(await json(changed)).toMatchObject({ error: "request_changed" });
    expect((await decide(owner, approval, "allow")).status).toBe(200);
    expect(await agent.next()).toMatchObject({ id: 1, result: { outcome: { optionId: "allow" } } });
  });

  it("writes the resolution to the D1 index and the audit log", async () => {
    const { owner, sessionId, approval } = await askOnce();
    await decide(owner, approval, "allow");
    await flush(owner.teamId, sessionId);
    const { approvals } = await json<{ approvals: Approval[] }>(
      await api("/v1/approvals?state=resolved&scope=mine", { cookie: owner.cookie }),
    );
    expect(approvals.find((a) => a.id === approval.id)).toMatchObject({ state: "allowed", optionId: "allow" });
    const { env } = await import("cloudflare:test");
    const { results } = await env.DB.prepare(
      // Escalation steps are audited too (escalation.test.ts); here: the request and its end.
      "SELECT action, actor, detail FROM audit_log WHERE subject = ? AND action <> 'approval.escalated' ORDER BY seq",
    )
      .bind(approval.id)
      .all<{ action: string; actor: string; detail: string }>();
    expect(results.map((r) => r.action)).toEqual(["approval.requested", "approval.allowed"]);
    expect(results[1]?.actor).toBe(`user:${owner.userId}`);
    expect(results.map((r) => r.detail).join()).not.toContain("rm -r build");
  });
});
