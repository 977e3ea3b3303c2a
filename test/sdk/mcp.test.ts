/**
 * `tapgate mcp` as an MCP client runs it: the built binary over stdio, driven by the MCP SDK's own
 * `Client` and `StdioClientTransport`, against `wrangler dev`. Claude Code's permission prompt
 * tool (`approve`) and `request_approval`; every failure a deny, never an MCP error.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/client";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, startLocalWorker } from "../../scripts/local-worker.mjs";
import type { Approval } from "../../sdk/src/approval";
import { Person } from "./helpers";
import { waitForResolved } from "./hook-helpers";

let worker: Awaited<ReturnType<typeof startLocalWorker>>;
let person: Person;
let key: string;
/** An empty home, so a developer's own `tapgate login` never leaks into a test. */
const home = mkdtempSync(join(tmpdir(), "tapgate-mcp-home-"));

beforeAll(async () => {
  worker = await startLocalWorker();
  person = await Person.signUp(worker.url);
  key = (await person.createKey("mcp tests")).key;
  // wrangler dev's start is slow on a busy machine; the other tests' 120 s is not always enough.
}, 300_000);
afterAll(() => worker?.stop());

/** `tapgate mcp` started by the SDK's client, as Claude Code starts an `--mcp-config` server. */
async function startMcp(env: Record<string, string>, opts: { args?: string[]; cwd?: string } = {}) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(ROOT, "sdk/dist/cli/main.js"), "mcp", ...(opts.args ?? [])],
    env: { ...getDefaultEnvironment(), HOME: home, XDG_CONFIG_HOME: home, ...env },
    cwd: opts.cwd ?? ROOT,
    stderr: "pipe",
  });
  const client = new Client({ name: "claude-code", version: "2.1.0" });
  await client.connect(transport);
  return client;
}

const signedIn = () => ({ TAPGATE_URL: worker.url, TAPGATE_API_KEY: key });

/** `approve`'s one text block, parsed: what Claude Code reads. */
function verdictOf(result: Awaited<ReturnType<Client["callTool"]>>) {
  expect(result.isError).toBeFalsy();
  expect(result.content).toHaveLength(1);
  const [block] = result.content as Array<{ type: string; text: string }>;
  expect(block?.type).toBe("text");
  return JSON.parse(block?.text ?? "");
}

/** The one pending approval with this tool call id (the session id is the server's own). */
const pendingCall = (toolCallId: string): Promise<Approval> =>
  person.waitForPendingWhere((a) => a.snapshot.toolCall.toolCallId === toolCallId).then(([a]) => a as Approval);

/** A port nothing listens on: bound, noted, closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

let calls = 0;
const bash = () => ({
  tool_name: "Bash",
  input: { command: "git push origin main", description: "Push" },
  tool_use_id: `toolu_${process.pid}_${++calls}`,
});

describe("tapgate mcp over stdio, against wrangler dev", () => {
  it("approve: the Claude hook's card, named by the MCP client; a human's allow answers updatedInput = the input", async () => {
    const client = await startMcp(signedIn());
    const args = bash();
    const call = client.callTool({ name: "approve", arguments: args });
    const approval = await pendingCall(args.tool_use_id);
    expect(approval.sessionId).toMatch(/^mcp-[0-9a-f-]{36}$/);
    expect(approval.snapshot.toolCall).toMatchObject({ title: "Bash: git …", kind: "execute", rawInput: args.input });
    expect(approval.snapshot.session).toMatchObject({ agent: { name: "claude-code" }, cwd: ROOT.replace(/\/$/, "") });
    expect((await person.decide(approval, "allow")).status).toBe(200);
    expect(verdictOf(await call)).toEqual({ behavior: "allow", updatedInput: args.input });
    await client.close();
  });

  it("approve Write: the diff against the file in the server's cwd; a human's deny answers deny with the words", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "tapgate-mcp-cwd-"));
    writeFileSync(join(cwd, "a.ts"), "old\n");
    const client = await startMcp(signedIn(), { cwd });
    const args = {
      tool_name: "Write",
      input: { file_path: join(cwd, "a.ts"), content: "new\n" },
      tool_use_id: "toolu_w",
    };
    const call = client.callTool({ name: "approve", arguments: args });
    const approval = await pendingCall("toolu_w");
    expect(approval.snapshot.toolCall).toMatchObject({
      kind: "edit",
      content: [{ type: "diff", path: join(cwd, "a.ts"), oldText: "old\n", newText: "new\n" }],
    });
    await person.decide(approval, "deny", "not that file");
    expect(verdictOf(await call)).toEqual({ behavior: "deny", message: expect.stringMatching(/: not that file$/) });
    await client.close();
  });

  it("request_approval: an allow option approves, as structured content", async () => {
    const client = await startMcp(signedIn());
    const call = client.callTool({ name: "request_approval", arguments: { title: "Send the weekly report" } });
    const [approval] = await person.waitForPendingWhere((a) => a.snapshot.toolCall.title === "Send the weekly report");
    await person.decide(approval as Approval, "allow");
    expect((await call).structuredContent).toEqual({
      approved: true,
      optionId: "allow",
      decidedBy: expect.any(Object),
    });
    await client.close();
  });

  it("no key, an unreachable server, bad arguments: each a deny with the reason, and the server keeps serving", async () => {
    const noKey = await startMcp({});
    expect(verdictOf(await noKey.callTool({ name: "approve", arguments: bash() }))).toEqual({
      behavior: "deny",
      message: expect.stringMatching(/^Tapgate: not signed in/),
    });
    const refused = await noKey.callTool({ name: "request_approval", arguments: { title: "x" } });
    expect(refused.isError).toBeFalsy();
    expect(refused.structuredContent).toMatchObject({
      approved: false,
      optionId: null,
      reason: expect.stringMatching(/not signed in/),
    });
    await noKey.close();

    const port = await closedPort();
    const unreachable = await startMcp({ TAPGATE_URL: `http://127.0.0.1:${port}`, TAPGATE_API_KEY: key });
    expect(verdictOf(await unreachable.callTool({ name: "approve", arguments: bash() }))).toEqual({
      behavior: "deny",
      message: expect.stringContaining(`127.0.0.1:${port}`),
    });
    await unreachable.close();

    const client = await startMcp(signedIn());
    const bad = verdictOf(
      await client.callTool({ name: "approve", arguments: { tool_name: "Bash", input: "rm -rf /" } }),
    );
    expect(bad).toEqual({ behavior: "deny", message: expect.stringMatching(/^Tapgate: invalid arguments \(input: /) });
    await client.close();
  });

  it("expiry (--timeout 1): a deny saying so", async () => {
    const client = await startMcp(signedIn(), { args: ["--timeout", "1"] });
    const verdict = verdictOf(await client.callTool({ name: "approve", arguments: bash() }));
    expect(verdict).toEqual({ behavior: "deny", message: "Tapgate: expired — no decision within 1 s" });
    await client.close();
  });

  it("the client goes away (stdin closes): its pending request ends agent_disconnected", async () => {
    const client = await startMcp(signedIn());
    const args = bash();
    const call = client.callTool({ name: "approve", arguments: args }).catch(() => "closed");
    const approval = await pendingCall(args.tool_use_id);
    await client.close();
    expect(await call).toBe("closed");
    const ended = await waitForResolved(person, approval.sessionId);
    expect(ended).toMatchObject({ state: "denied", reason: "agent_disconnected" });
  });
});
