/**
 * Private requests at the gate (docs/agent-protocol.md "Private requests"): a sealed request is
 * held on what routing needs, its card carries the envelope and none of its content, and an allow
 * bound to its `requestHash` reaches the agent; in a private team an unsealed request is refused
 * `private_required` on every way in (socket, long poll, the Claude Code HTTP hook, MCP), before
 * anything of it is stored.
 */
import { env, SELF } from "cloudflare:test";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { SEALED_TOOL_CALL_ID } from "../../sdk/src/private/contract";
import {
  api,
  connectAgent,
  createKey,
  decide,
  flush,
  json,
  type Member,
  ORIGIN,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import { CANARY, sealedElicitation, sealedPermission, setPrivacy } from "./private-helpers";

const asAgent = (key: string, path: string, init: RequestInit = {}) =>
  SELF.fetch(`${ORIGIN}${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
  });

async function oneOf(owner: Member, sessionId: string): Promise<Approval> {
  return vi.waitFor(
    async () => {
      const [approval] = await pendingApprovals(owner, sessionId);
      if (!approval) throw new Error("not held yet");
      return approval;
    },
    { timeout: 10_000, interval: 20 },
  );
}

async function privateTeam() {
  const owner = await signUp();
  await setPrivacy(owner);
  const { key } = await createKey(owner);
  return { owner, key };
}

async function approvalRows(teamId: string) {
  const { results } = await env.DB.prepare("SELECT * FROM approvals WHERE team_id = ?").bind(teamId).all();
  return results;
}

describe("a sealed request", () => {
  it("over the socket: held with the envelope and no content, and an allow with its requestHash reaches the agent", async () => {
    const { owner, key } = await privateTeam();
    const sessionId = unique("sealed");
    const agent = await connectAgent(key, sessionId);
    await agent.send({
      jsonrpc: "2.0",
      method: "_tapgate/hello",
      params: { title: "deploy bot", cwd: `/home/${CANARY}` },
    });
    await agent.send({
      jsonrpc: "2.0",
      method: "session/update",
      params: {
        sessionId,
        update: { sessionUpdate: "tool_call", toolCallId: SEALED_TOOL_CALL_ID, title: CANARY, rawInput: { c: CANARY } },
      },
    });
    const { params, sealed } = await sealedPermission(sessionId);
    await agent.ask(1, params);
    const held = await oneOf(owner, sessionId);
    const read = await json<Approval>(await api(`/v1/approvals/${held.id}`, { cookie: owner.cookie }));
    expect(read.sealed).toEqual(sealed);
    expect(read.requestHash).toBe(sealed.requestHash);
    expect(read.risk).toBe("normal");
    expect(read.snapshot).toEqual({
      toolCall: { toolCallId: SEALED_TOOL_CALL_ID, kind: "execute" },
      session: { title: "deploy bot", agent: null, host: null, cwd: null },
    });
    expect(read.options).toEqual([
      { optionId: "allow", name: "Allow once", kind: "allow_once" },
      { optionId: "deny", name: "Deny", kind: "reject_once" },
    ]);
    const { sealed: _, ...rest } = read;
    expect(JSON.stringify(rest)).not.toContain(CANARY);

    expect((await decide(owner, read, "allow")).status).toBe(200);
    expect(await agent.next()).toMatchObject({
      id: 1,
      result: { outcome: { outcome: "selected", optionId: "allow" } },
    });
    await flush(owner.teamId, sessionId);
    const sessions = await env.DB.prepare("SELECT cwd FROM agent_sessions WHERE session_id = ?")
      .bind(sessionId)
      .first<{ cwd: string | null }>();
    expect(sessions?.cwd).toBeNull();
  });

  it("over the long poll: 201, held, and the poll ends with the allow", async () => {
    const { owner, key } = await privateTeam();
    const sessionId = unique("sealed-http");
    const { params, sealed } = await sealedPermission(sessionId);
    const asked = await asAgent(key, `/v1/agent/sessions/${sessionId}/permissions`, {
      method: "POST",
      body: JSON.stringify(params),
    });
    expect(asked.status).toBe(201);
    const { approvalId } = await json<{ approvalId: string }>(asked);
    const held = await oneOf(owner, sessionId);
    expect(held).toMatchObject({ id: approvalId, requestHash: sealed.requestHash, sealed });
    const polled = asAgent(key, `/v1/agent/approvals/${approvalId}?wait=30`);
    expect((await decide(owner, held, "allow", "0".repeat(64))).status).toBe(409);
    expect((await decide(owner, held, "allow")).status).toBe(200);
    expect(await json(await polled)).toMatchObject({
      state: "allowed",
      outcome: { outcome: "selected", optionId: "allow" },
    });
  });

  it("takes the SDK's risk tier, and is never edited (409 private_not_editable)", async () => {
    const { owner, key } = await privateTeam();
    const sessionId = unique("sealed-high");
    const agent = await connectAgent(key, sessionId);
    const { params } = await sealedPermission(sessionId, { risk: "high" });
    await agent.ask(1, params);
    const held = await oneOf(owner, sessionId);
    expect(held.risk).toBe("high");
    const edited = await api(`/v1/approvals/${held.id}/decision`, {
      method: "POST",
      cookie: owner.cookie,
      body: JSON.stringify({ optionId: "allow", requestHash: held.requestHash, updatedInput: { command: "ls" } }),
    });
    expect(edited.status).toBe(409);
    expect(await json(edited)).toMatchObject({ error: "private_not_editable" });
    // High risk: an allow without a step-up is refused, as for any high-risk request.
    expect(await json(await decide(owner, held, "allow"))).toMatchObject({ error: "step_up_required" });
  });

  it("is refused whole, never cut, when its ciphertext is over storedBytesPerRequest; and with content outside the envelope", async () => {
    const owner = await signUp();
    const row = await env.DB.prepare("SELECT policy FROM teams WHERE id = ?")
      .bind(owner.teamId)
      .first<{ policy: string }>();
    const policy = JSON.parse(row?.policy ?? "{}");
    await env.DB.prepare("UPDATE teams SET policy = ? WHERE id = ?")
      .bind(JSON.stringify({ ...policy, limits: { ...policy.limits, storedBytesPerRequest: 4096 } }), owner.teamId)
      .run();
    const { key } = await createKey(owner);
    const sessionId = unique("sealed-big");
    const agent = await connectAgent(key, sessionId);
    const { params } = await sealedPermission(sessionId, { command: "x".repeat(5000) });
    await agent.ask(1, params);
    const big = await agent.next<{ error: { code: number; message: string } }>();
    expect(big.error.code).toBe(-32602);
    expect(big.error.message).toMatch(/ciphertext is \d+ bytes, over the team's storedBytesPerRequest \(4096\)/);

    const small = await sealedPermission(sessionId);
    await agent.ask(2, { ...small.params, toolCall: { ...small.params.toolCall, title: CANARY } });
    expect(await agent.next()).toMatchObject({
      id: 2,
      error: { code: -32602, message: expect.stringContaining("toolCall.title") },
    });
    expect(await approvalRows(owner.teamId)).toEqual([]);
  });

  it("a sealed elicitation is held with the placeholder question and answered", async () => {
    const { owner, key } = await privateTeam();
    const sessionId = unique("sealed-ask");
    const agent = await connectAgent(key, sessionId);
    await agent.send({
      jsonrpc: "2.0",
      id: 5,
      method: "elicitation/create",
      params: await sealedElicitation(sessionId),
    });
    const held = await oneOf(owner, sessionId);
    expect(held).toMatchObject({ type: "elicitation", sealed: expect.any(Object) });
    expect(JSON.stringify({ ...held, sealed: null })).not.toContain(CANARY);
    const answered = await api(`/v1/approvals/${held.id}/decision`, {
      method: "POST",
      cookie: owner.cookie,
      body: JSON.stringify({ action: "accept", content: { answer: "42" }, requestHash: held.requestHash }),
    });
    expect(answered.status).toBe(200);
    expect(await agent.next()).toMatchObject({ id: 5, result: { action: "accept", content: { answer: "42" } } });
  });
});

describe("an unsealed request in a private team is refused private_required, and nothing is stored", () => {
  it("over the socket", async () => {
    const { owner, key } = await privateTeam();
    const sessionId = unique("plain");
    const agent = await connectAgent(key, sessionId);
    await agent.ask(1, permissionParams(sessionId));
    expect(await agent.next()).toMatchObject({ id: 1, error: { code: -32602, data: { reason: "private_required" } } });
    await agent.send({
      jsonrpc: "2.0",
      id: 2,
      method: "elicitation/create",
      params: { sessionId, mode: "form", message: CANARY, requestedSchema: { type: "object", properties: {} } },
    });
    expect(await agent.next()).toMatchObject({ id: 2, error: { code: -32602, data: { reason: "private_required" } } });
    await flush(owner.teamId, sessionId);
    expect(await approvalRows(owner.teamId)).toEqual([]);
  });

  it("over the long poll: 400 invalid_request with reason private_required", async () => {
    const { owner, key } = await privateTeam();
    const sessionId = unique("plain-http");
    const asked = await asAgent(key, `/v1/agent/sessions/${sessionId}/permissions`, {
      method: "POST",
      body: JSON.stringify(permissionParams(sessionId)),
    });
    expect(asked.status).toBe(400);
    expect(await json(asked)).toMatchObject({ error: "invalid_request", reason: "private_required" });
    await flush(owner.teamId, sessionId);
    expect(await approvalRows(owner.teamId)).toEqual([]);
  });

  it("the Claude Code HTTP hook denies, naming tapgate claude-hook", async () => {
    const { owner, key } = await privateTeam();
    const sessionId = unique("plain-claude");
    const res = await asAgent(key, "/v1/hooks/claude-code?timeout=60", {
      method: "POST",
      body: JSON.stringify({
        session_id: sessionId,
        cwd: `/home/${CANARY}`,
        hook_event_name: "PreToolUse",
        tool_name: "Bash",
        tool_input: { command: `echo ${CANARY}` },
        tool_use_id: unique("toolu"),
      }),
    });
    const out = await json<{ hookSpecificOutput: Record<string, string> }>(res);
    expect(out.hookSpecificOutput).toMatchObject({ permissionDecision: "deny" });
    expect(out.hookSpecificOutput.permissionDecisionReason).toContain("tapgate claude-hook");
    await flush(owner.teamId, sessionId);
    expect(await approvalRows(owner.teamId)).toEqual([]);
    const session = await env.DB.prepare("SELECT cwd FROM agent_sessions WHERE session_id = ?")
      .bind(sessionId)
      .first<{ cwd: string | null }>();
    expect(session?.cwd ?? null).toBeNull();
  });

  it("the MCP approve tool answers deny with the reason", async () => {
    const { owner, key } = await privateTeam();
    const transport = new StreamableHTTPClientTransport(new URL(`${ORIGIN}/v1/mcp`), {
      fetch: (url, init) => SELF.fetch(url, init),
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    });
    const client = new Client({ name: "test-client", version: "1.0.0" });
    await client.connect(transport);
    const result = await client.callTool({
      name: "approve",
      arguments: { tool_name: "Bash", input: { command: `echo ${CANARY}` } },
    });
    const [block] = result.content as Array<{ text: string }>;
    const answer = JSON.parse(block?.text ?? "");
    expect(answer).toMatchObject({ behavior: "deny", message: expect.stringContaining("private mode") });
    await client.close();
    expect(await approvalRows(owner.teamId)).toEqual([]);
  });

  it("a sealed request in a standard team is held too", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("std-sealed");
    const agent = await connectAgent(key, sessionId);
    const { params, sealed } = await sealedPermission(sessionId);
    await agent.ask(1, params);
    expect(await oneOf(owner, sessionId)).toMatchObject({ sealed, requestHash: sealed.requestHash });
  });
});
