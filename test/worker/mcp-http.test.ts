/**
 * Tapgate's MCP tools over Streamable HTTP (`/v1/mcp`) in workerd, driven by the MCP SDK's own
 * `Client` and `StreamableHTTPClientTransport`: every answer a human gives, every failure a deny
 * (never an MCP error), a closed MCP session ending its requests, the key's checks.
 */

import { SELF } from "cloudflare:test";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { api, createKey, decide, json, type Member, ORIGIN, pendingApprovals, settled, signUp } from "./helpers";

async function connect(key: string, query = "") {
  const transport = new StreamableHTTPClientTransport(new URL(`${ORIGIN}/v1/mcp${query}`), {
    fetch: (url, init) => SELF.fetch(url, init),
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  const client = new Client({ name: "test-client", version: "1.0.0" });
  await client.connect(transport);
  const sessionId = transport.sessionId;
  if (!sessionId) throw new Error("initialize answered no Mcp-Session-Id");
  return { client, transport, sessionId };
}

/** One JSON-RPC message posted as an MCP client would, without the SDK. */
function send(message: unknown, headers: Record<string, string>) {
  return SELF.fetch(`${ORIGIN}/v1/mcp`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(message),
  });
}

/** The session's one pending approval, once the gate holds it. */
async function pendingOf(owner: Member, sessionId: string): Promise<Approval> {
  for (;;) {
    const [approval] = await pendingApprovals(owner, sessionId);
    if (approval) return approval;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** `approve`'s one text block, parsed: what Claude Code reads. */
function verdictOf(result: Awaited<ReturnType<Client["callTool"]>>) {
  expect(result.isError).toBeFalsy();
  expect(result.content).toHaveLength(1);
  const [block] = result.content as Array<{ type: string; text: string }>;
  expect(block?.type).toBe("text");
  return JSON.parse(block?.text ?? "");
}

const bash = {
  tool_name: "Bash",
  input: { command: "git push origin main", description: "Push" },
  tool_use_id: "toolu_1",
};

describe("MCP over Streamable HTTP: /v1/mcp", () => {
  it("lists both tools; approve's allow answers updatedInput = the input, and the card is the Claude hook's", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const { client, sessionId } = await connect(key);
    expect(sessionId).toMatch(/^mcp-[0-9a-f-]{36}$/);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(["approve", "request_approval"]);
    const call = client.callTool({ name: "approve", arguments: bash });
    const approval = await pendingOf(owner, sessionId);
    expect(approval.snapshot.toolCall).toMatchObject({
      toolCallId: "toolu_1",
      title: "Bash: git …",
      kind: "execute",
      rawInput: bash.input,
    });
    expect((await decide(owner, approval, "allow")).status).toBe(200);
    expect(verdictOf(await call)).toEqual({ behavior: "allow", updatedInput: bash.input });
    await client.close();
  });

  it("approve: a human's deny answers deny with who denied", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const { client, sessionId } = await connect(key);
    const call = client.callTool({ name: "approve", arguments: bash });
    await decide(owner, await pendingOf(owner, sessionId), "deny");
    expect(verdictOf(await call)).toEqual({ behavior: "deny", message: "denied on Tapgate by Ada (web)" });
    await client.close();
  });

  it("request_approval: the agent's title, command and options on the card; the answer as structured content", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const { client, sessionId } = await connect(key);
    const options = [
      { optionId: "go", name: "Deploy", kind: "allow_once" },
      { optionId: "stop", name: "Not now", kind: "reject_once" },
    ];
    const call = client.callTool({
      name: "request_approval",
      arguments: { title: "Deploy to production", command: "wrangler deploy", details: "v1.4.2", options },
    });
    const approval = await pendingOf(owner, sessionId);
    expect(approval.snapshot.toolCall).toMatchObject({
      title: "Deploy to production",
      kind: "execute",
      rawInput: { command: "wrangler deploy" },
      content: [{ type: "content", content: { type: "text", text: "v1.4.2" } }],
    });
    expect(approval.options.map((o) => o.optionId)).toEqual(["go", "stop"]);
    await decide(owner, approval, "go");
    const result = await call;
    const expected = { approved: true, optionId: "go", decidedBy: { name: "Ada", device: "web" } };
    expect(result.structuredContent).toEqual(expected);
    expect(JSON.parse((result.content as Array<{ text: string }>)[0]?.text ?? "")).toEqual(expected);
    await client.close();
  });

  it("bad arguments: a deny with the reason, never a tool error, and nothing is asked", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const { client, sessionId } = await connect(key);
    const verdict = verdictOf(await client.callTool({ name: "approve", arguments: { tool_name: "Bash" } }));
    expect(verdict).toEqual({
      behavior: "deny",
      message: expect.stringMatching(/^Tapgate: invalid arguments \(input: /),
    });
    const result = await client.callTool({ name: "request_approval", arguments: { title: "" } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({
      approved: false,
      optionId: null,
      reason: expect.stringMatching(/^Tapgate: invalid arguments \(title: /),
    });
    expect(await pendingApprovals(owner, sessionId)).toEqual([]);
    await client.close();
  });

  it("expiry: a deny saying so, and the card is no longer pending", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const { client, sessionId } = await connect(key, "?timeout=1");
    const verdict = verdictOf(await client.callTool({ name: "approve", arguments: bash }));
    expect(verdict).toEqual({ behavior: "deny", message: expect.stringMatching(/^Tapgate: expired — no decision/) });
    expect(await pendingApprovals(owner, sessionId)).toEqual([]);
    await client.close();
  });

  it("a closed MCP session (DELETE) ends its pending request agent_disconnected, and the waiting call is a deny", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const { client, transport, sessionId } = await connect(key);
    const call = client.callTool({ name: "approve", arguments: bash });
    const approval = await pendingOf(owner, sessionId);
    await transport.terminateSession();
    expect(await settled(owner, approval.id)).toMatchObject({ state: "denied", reason: "agent_disconnected" });
    expect(verdictOf(await call)).toEqual({
      behavior: "deny",
      message: "Tapgate: agent disconnected before anyone decided",
    });
  });

  it("the key: none or revoked is 401 before any MCP", async () => {
    const owner = await signUp();
    const { key, id: keyId } = await createKey(owner);
    const initialize = (authorization?: string) =>
      send(
        {
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "curl", version: "1" } },
        },
        authorization ? { Authorization: authorization } : {},
      );
    expect((await initialize()).status).toBe(401);
    expect((await initialize(`Bearer ${key}`)).status).toBe(200);
    expect((await api(`/v1/keys/${keyId}`, { method: "DELETE", cookie: owner.cookie })).status).toBe(200);
    const revoked = await initialize(`Bearer ${key}`);
    expect(revoked.status).toBe(401);
    expect(await json(revoked)).toMatchObject({ error: "bad_api_key" });
  });
});
