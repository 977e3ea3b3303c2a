/**
 * Private mode's proof, agent side (issue 34), against `wrangler dev`: a canary in every content
 * field, sent every way an agent asks through the SDK and the CLI (`Tapgate` sessions, a
 * permission and an elicitation; `tapgate acp`, `run` and `mcp`; the Claude Code, Codex and Gemini
 * hook commands; a long-poll client sealing with `tapgate seal`), each decided by a
 * person. Then everything the service holds or emitted is scanned: every file of its local state
 * (D1 and both Durable Objects' SQLite), the Worker's logs, the live feed's frames, the mail and
 * the webhook bodies. The canary is in none of them; the person's device opens every request.
 */
import { mkdtempSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/client";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { ROOT, startLocalWorker } from "../../scripts/local-worker.mjs";
import type { Approval } from "../../sdk/src/approval";
import { Tapgate } from "../../sdk/src/client";
import { type newDeviceKeyPair, openSealed } from "../../sdk/src/private/envelope";
import { CANARY_AGENT, Cli, prompt, startProxy } from "./acp-helpers";
import { Person, unique } from "./helpers";
import { runHook } from "./hook-helpers";
import { addPasskey, makePrivate, registerDeviceKey } from "./private-helpers";

const CANARY = `canary${process.pid}x${Date.now().toString(36)}`;

let worker: Awaited<ReturnType<typeof startLocalWorker>>;
let ada: Person;
let device: Awaited<ReturnType<typeof newDeviceKeyPair>>;
let key: string;
let receiver: Server;
const logs: string[] = [];
const webhookBodies: string[] = [];
const liveFrames: string[] = [];
let live: WebSocket;

beforeAll(async () => {
  worker = await startLocalWorker({ log: (line) => logs.push(line) });
  ada = await Person.signUp(worker.url, "Ada");
  const passkey = await addPasskey(ada);
  device = await registerDeviceKey(ada, passkey);
  await makePrivate(ada, passkey);
  key = (await ada.createKey("canary")).key;
  receiver = createServer((request, response) => {
    let body = "";
    request.on("data", (d) => (body += d));
    request.on("end", () => {
      webhookBodies.push(body);
      response.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const { port } = receiver.address() as { port: number };
  const hook = await ada.fetch("/v1/webhooks", {
    method: "POST",
    body: JSON.stringify({ url: `http://127.0.0.1:${port}/hook`, events: ["approval.requested", "audit.appended"] }),
  });
  expect(hook.status, await hook.clone().text()).toBe(201);
  live = new WebSocket(`${worker.url.replace("http", "ws")}/v1/live`, {
    headers: { Cookie: ada.cookie, Origin: worker.url },
  });
  live.on("message", (data) => liveFrames.push(String(data)));
  await new Promise((resolve, reject) => live.once("open", resolve).once("error", reject));
}, 300_000);
afterAll(async () => {
  live?.close();
  receiver?.close();
  await worker?.stop();
});

const agentEnv = (): NodeJS.ProcessEnv => ({ ...process.env, TAPGATE_URL: worker.url, TAPGATE_API_KEY: key });

/** The session's one pending request: sealed, opening on the device to the canary; then `optionKind` is picked. */
async function decideSealed(match: (a: Approval) => boolean, optionKind = "reject_once"): Promise<void> {
  const [approval] = await ada.waitForPendingWhere(match);
  if (!approval?.sealed) throw new Error("the request was not sealed");
  const opened = await openSealed(approval.sealed, approval.requestHash, device);
  expect(opened.ok && JSON.stringify(opened.plaintext)).toContain(CANARY);
  const option = approval.options.find((o) => o.kind === optionKind);
  expect((await ada.decide(approval, option?.optionId ?? "")).status).toBe(200);
}

const ofSession = (sessionId: string) => (a: Approval) => a.sessionId === sessionId;

/** A request with the canary in every content field a tool call has. */
const canaryRequest = (sessionId: string) => ({
  sessionId,
  toolCall: {
    toolCallId: unique("call"),
    title: `deploy ${CANARY}`,
    kind: "execute" as const,
    rawInput: { command: `deploy --token ${CANARY}` },
    content: [{ type: "diff", path: `/srv/${CANARY}.ts`, oldText: "a", newText: CANARY }],
    locations: [{ path: `/srv/${CANARY}/main.ts` }],
  },
  options: [
    { optionId: "allow", name: `Allow ${CANARY}`, kind: "allow_once" as const },
    { optionId: "deny", name: `Deny ${CANARY}`, kind: "reject_once" as const },
  ],
  _meta: { note: CANARY },
});

/** Every file under `dir`, read whole. */
async function filesUnder(dir: string): Promise<Array<{ path: string; bytes: Buffer }>> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const files = entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
  return Promise.all(files.map(async (path) => ({ path, bytes: await readFile(path) })));
}

describe("a private team's requests, every way an agent asks", () => {
  it("the SDK: a permission and an elicitation", async () => {
    const gate = new Tapgate({ url: worker.url, apiKey: key, onLog: () => undefined });
    const sessionId = unique("sdk");
    const session = await gate.session(sessionId, { title: "canary run", cwd: `/home/${CANARY}` });
    const asked = session.requestPermission(canaryRequest(sessionId));
    await decideSealed((a) => a.sessionId === sessionId && a.type !== "elicitation");
    expect((await asked).outcome).toEqual({ outcome: "selected", optionId: "deny" });
    const elicited = session.elicit({
      sessionId,
      mode: "form",
      message: `Which ${CANARY}?`,
      requestedSchema: { type: "object", properties: { pick: { type: "string", title: CANARY } } },
    } as never);
    const [question] = await ada.waitForPendingWhere((a) => a.sessionId === sessionId && a.type === "elicitation");
    const opened = await openSealed(
      question?.sealed as NonNullable<Approval["sealed"]>,
      question?.requestHash ?? "",
      device,
    );
    expect(opened.ok && JSON.stringify(opened.plaintext)).toContain(CANARY);
    const declined = await ada.fetch(`/v1/approvals/${question?.id}/decision`, {
      method: "POST",
      body: JSON.stringify({ action: "decline", requestHash: question?.requestHash }),
    });
    expect(declined.status).toBe(200);
    expect(await elicited).toMatchObject({ action: "decline" });
    gate.close();
  });

  it("tapgate acp and tapgate run", async () => {
    const { editor, sessionId } = await startProxy(["--", ...CANARY_AGENT], agentEnv());
    const turn = prompt(editor, sessionId, CANARY);
    await decideSealed(ofSession(sessionId));
    await turn;
    editor.child.stdin?.end();

    const run = new Cli(["run", "--prompt", CANARY, "--", ...CANARY_AGENT], agentEnv(), "ignore");
    await decideSealed((a) => a.options.length > 0 && a.sealed !== undefined && a.state === "pending");
    expect(await run.exited).toBe(0);
    expect(run.stderr).not.toContain(CANARY);
  });

  it("tapgate mcp", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [join(ROOT, "sdk/dist/cli/main.js"), "mcp"],
      env: { ...getDefaultEnvironment(), TAPGATE_URL: worker.url, TAPGATE_API_KEY: key },
      cwd: ROOT,
      stderr: "pipe",
    });
    const client = new Client({ name: "claude-code", version: "2.1.0" });
    await client.connect(transport);
    const call = client.callTool({
      name: "approve",
      arguments: { tool_name: "Bash", input: { command: `deploy ${CANARY}` }, tool_use_id: unique("toolu") },
    });
    await decideSealed((a) => a.sealed !== undefined && a.state === "pending");
    expect(JSON.stringify(await call)).toContain("deny");
    await client.close();
  });

  it("the Claude Code, Codex and Gemini hook commands", async () => {
    const base = (sessionId: string) => ({ session_id: sessionId, cwd: `/home/${CANARY}` });
    const inputs = {
      "claude-hook": (id: string) => ({
        ...base(id),
        hook_event_name: "PermissionRequest",
        tool_name: "Bash",
        tool_input: { command: `cat ${CANARY}`, description: CANARY },
      }),
      "codex-hook": (id: string) => ({
        ...base(id),
        turn_id: unique("turn"),
        transcript_path: null,
        hook_event_name: "PermissionRequest",
        model: "gpt-5-codex",
        permission_mode: "default",
        tool_name: "Bash",
        tool_input: { command: `cat ${CANARY}`, description: CANARY },
      }),
      "gemini-hook": (id: string) => ({
        ...base(id),
        transcript_path: `/home/${CANARY}/chat.json`,
        hook_event_name: "BeforeTool",
        timestamp: new Date().toISOString(),
        tool_name: "run_shell_command",
        tool_input: { command: `cat ${CANARY}` },
      }),
    };
    for (const [command, input] of Object.entries(inputs)) {
      const sessionId = unique(command);
      const run = runHook(command, input(sessionId), { env: { TAPGATE_URL: worker.url, TAPGATE_API_KEY: key } });
      await decideSealed(ofSession(sessionId));
      expect((await run).stdout).not.toContain(CANARY);
    }
  });

  it("a long-poll client (curl) that seals with `tapgate seal`", async () => {
    const sessionId = unique("poll");
    const home = mkdtempSync(join(tmpdir(), "tapgate-seal-"));
    const seal = new Cli(["seal", "--title", "poller"], { ...agentEnv(), XDG_CONFIG_HOME: home });
    seal.child.stdin?.end(JSON.stringify(canaryRequest(sessionId)));
    expect(await seal.exited, seal.stderr).toBe(0);
    const sealed = seal.lines.join("\n");
    expect(sealed).not.toContain(CANARY);
    const held = await fetch(`${worker.url}/v1/agent/sessions/${sessionId}/permissions`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: sealed,
    });
    expect(held.status).toBe(201);
    await decideSealed(ofSession(sessionId), "allow_once");
  });

  it("leave no canary in the service's state, logs, live feed, mail or webhooks", async () => {
    const mail = await (await fetch(`${worker.url}/v1/dev/outbox`)).text();
    await expect.poll(() => webhookBodies.length, { timeout: 30_000 }).toBeGreaterThan(0);
    const state = await filesUnder(worker.persistTo);
    expect(state.length).toBeGreaterThan(0);
    // The scan reads what the service may see (its sessions' agents), so a leak would show.
    expect(state.some((f) => f.bytes.includes("canary-agent"))).toBe(true);
    const leaks = [
      ...state.filter((f) => f.bytes.includes(CANARY)).map((f) => f.path),
      ...Object.entries({ logs, liveFrames, webhookBodies, mail: [mail] })
        .filter(([, texts]) => texts.some((t) => t.includes(CANARY)))
        .map(([place]) => place),
    ];
    expect(leaks).toEqual([]);
  });
});
