/**
 * `tapgate codex-hook` and `tapgate gemini-hook` as Codex and Gemini CLI run them: the built
 * binary, hook JSON on stdin shaped exactly as each agent's published schema, against `wrangler dev`.
 */
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalWorker } from "../../scripts/local-worker.mjs";
import { denyReason } from "../../sdk/src/hooks/decision";
import { Person, unique } from "./helpers";
import { answerOf, runHook, waitForResolved } from "./hook-helpers";

let worker: Awaited<ReturnType<typeof startLocalWorker>>;
let person: Person;
let key: string;

beforeAll(async () => {
  worker = await startLocalWorker();
  person = await Person.signUp(worker.url);
  key = (await person.createKey("agent hook tests")).key;
});
afterAll(() => worker?.stop());

const signedIn = () => ({ TAPGATE_URL: worker.url, TAPGATE_API_KEY: key });

/** A port nothing listens on: bound, noted, closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** `permission-request.command.input.schema.json`: every required field, no others. */
function codexInput(sessionId: string, toolName: "Bash" | "NetworkAccess", command: string) {
  return {
    session_id: sessionId,
    turn_id: unique("turn"),
    transcript_path: null,
    cwd: "/home/ada/demo",
    hook_event_name: "PermissionRequest",
    model: "gpt-5-codex",
    permission_mode: "default",
    tool_name: toolName,
    tool_input: { command, description: "why the agent wants it" },
  };
}

/** `docs/hooks/reference.md`: the base fields, then `tool_name` and `tool_input`. */
function geminiInput(sessionId: string, toolName: string, toolInput: Record<string, unknown>) {
  return {
    session_id: sessionId,
    transcript_path: "/home/ada/.gemini/tmp/chats/session.json",
    cwd: "/home/ada/demo",
    hook_event_name: "BeforeTool",
    timestamp: new Date().toISOString(),
    tool_name: toolName,
    tool_input: toolInput,
  };
}

const codexDeny = (message: string) => ({
  hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny", message } },
});

describe("tapgate codex-hook against wrangler dev", () => {
  it("Bash: the card shows the command, the cwd and Codex; a human's allow is an allow", async () => {
    const sessionId = unique("codex");
    const input = codexInput(sessionId, "Bash", "git push origin main");
    const run = runHook("codex-hook", input, { env: signedIn() });
    const approval = await person.waitForOne(sessionId);
    expect(approval.snapshot.toolCall).toMatchObject({
      title: "Bash: git …",
      kind: "execute",
      rawInput: input.tool_input,
    });
    expect(approval.snapshot.toolCall.toolCallId).toMatch(/^codex-[0-9a-f-]{36}$/);
    expect(approval.snapshot.session).toMatchObject({
      title: "Codex",
      agent: { name: "codex" },
      cwd: "/home/ada/demo",
    });
    expect(approval.options.map((o) => o.kind)).toEqual(["allow_once", "reject_once", "reject_once"]);
    expect((await person.decide(approval, "allow")).status).toBe(200);
    expect(answerOf(await run)).toEqual({
      hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow" } },
    });
  });

  it("NetworkAccess: kind fetch; a human's deny is a deny that names who", async () => {
    const sessionId = unique("codex");
    const run = runHook("codex-hook", codexInput(sessionId, "NetworkAccess", "curl https://example.com"), {
      env: signedIn(),
    });
    const approval = await person.waitForOne(sessionId);
    expect(approval.snapshot.toolCall).toMatchObject({ title: "NetworkAccess: curl …", kind: "fetch" });
    expect((await person.decide(approval, "deny")).status).toBe(200);
    expect(answerOf(await run)).toEqual(codexDeny("denied on Tapgate by Ada (web)"));
  });

  it("approval_context: the card shows what it asks; Deny and stop the turn answers interrupt: true", async () => {
    const sessionId = unique("codex");
    const approvalContext = {
      sandbox_permissions: "require_escalated",
      additional_permissions: { network: { enabled: true } },
      justification: "the tests download fixtures",
    };
    const input = { ...codexInput(sessionId, "Bash", "npm test"), approval_context: approvalContext };
    const run = runHook("codex-hook", input, { env: signedIn() });
    const approval = await person.waitForOne(sessionId);
    expect(approval.snapshot.toolCall.content).toEqual([
      {
        type: "content",
        content: {
          type: "text",
          text: "Asks to run outside the sandbox (sandbox escalation)\nAsks for network access\nCodex's justification: the tests download fixtures",
        },
      },
    ]);
    expect(approval.snapshot.meta).toMatchObject({ codex: { approvalContext } });
    expect(approval.options.map((o) => o.optionId)).toEqual(["allow", "deny", "deny_stop"]);
    expect((await person.decide(approval, "deny_stop")).status).toBe(200);
    expect(answerOf(await run)).toEqual({
      hookSpecificOutput: {
        hookEventName: "PermissionRequest",
        decision: { behavior: "deny", message: "denied on Tapgate by Ada (web)", interrupt: true },
      },
    });
  });

  it("--timeout 1: the card expires on the server and Codex gets a deny", async () => {
    const sessionId = unique("codex");
    const run = await runHook("codex-hook", codexInput(sessionId, "Bash", "make deploy"), {
      args: ["--timeout", "1"],
      env: signedIn(),
    });
    expect(answerOf(run)).toEqual(codexDeny("Tapgate: expired — no decision within 1 s"));
    expect(await waitForResolved(person, sessionId)).toMatchObject({ state: "expired", reason: "expired" });
  });

  it("no credentials, an unreachable server, malformed input: each a deny in Codex's shape, exit 0", async () => {
    const input = codexInput(unique("codex"), "Bash", "ls");
    expect(answerOf(await runHook("codex-hook", input))).toEqual(
      codexDeny("Tapgate: not signed in — run `tapgate login`"),
    );

    const port = await closedPort();
    const unreachable = await runHook("codex-hook", input, {
      env: { TAPGATE_URL: `http://127.0.0.1:${port}`, TAPGATE_API_KEY: key },
      args: ["--timeout", "5"],
    });
    expect(answerOf(unreachable)).toMatchObject(codexDeny(expect.stringMatching(/^Tapgate: /)));

    const garbage = await runHook("codex-hook", "not json", { env: signedIn() });
    expect(answerOf(garbage)).toEqual(codexDeny("Tapgate: the hook input on stdin is not JSON"));

    // A tool outside the schema's enum is refused, not guessed at.
    const otherTool = await runHook("codex-hook", { ...input, tool_name: "apply_patch" }, { env: signedIn() });
    expect(JSON.stringify(answerOf(otherTool))).toContain("tool_name");
    const noCommand = await runHook("codex-hook", { ...input, tool_input: {} }, { env: signedIn() });
    expect(answerOf(noCommand)).toMatchObject(codexDeny(expect.stringContaining("tool_input.command")));
  });
});

describe("tapgate gemini-hook against wrangler dev", () => {
  it("run_shell_command: the card shows the command, the cwd and Gemini CLI; allow is an allow", async () => {
    const sessionId = unique("gemini");
    const toolInput = { command: "rm -r build", description: "clean", directory: "." };
    const run = runHook("gemini-hook", geminiInput(sessionId, "run_shell_command", toolInput), { env: signedIn() });
    const approval = await person.waitForOne(sessionId);
    expect(approval.snapshot.toolCall).toMatchObject({
      title: "run_shell_command: rm …",
      kind: "execute",
      rawInput: toolInput,
    });
    expect(approval.snapshot.session).toMatchObject({
      title: "Gemini CLI",
      agent: { name: "gemini-cli" },
      cwd: "/home/ada/demo",
    });
    await person.decide(approval, "allow");
    expect(answerOf(await run)).toEqual({ decision: "allow", reason: "allowed on Tapgate" });
  });

  it("replace: a diff on the card; a human's deny is decision deny with the reason", async () => {
    const sessionId = unique("gemini");
    const toolInput = { file_path: "/home/ada/demo/app.ts", old_string: "a = 1", new_string: "a = 2" };
    const run = runHook("gemini-hook", geminiInput(sessionId, "replace", toolInput), { env: signedIn() });
    const approval = await person.waitForOne(sessionId);
    expect(approval.snapshot.toolCall).toMatchObject({
      kind: "edit",
      content: [{ type: "diff", path: toolInput.file_path, oldText: "a = 1", newText: "a = 2" }],
      locations: [{ path: toolInput.file_path }],
    });
    await person.decide(approval, "deny");
    expect(answerOf(await run)).toEqual({ decision: "deny", reason: "denied on Tapgate by Ada (web)" });
  });

  it("--timeout 1: expiry is a deny", async () => {
    const sessionId = unique("gemini");
    const input = geminiInput(sessionId, "write_file", { file_path: "/home/ada/demo/x", content: "x" });
    const run = await runHook("gemini-hook", input, { args: ["--timeout", "1"], env: signedIn() });
    expect(answerOf(run)).toEqual({ decision: "deny", reason: "Tapgate: expired — no decision within 1 s" });
    const approval = await waitForResolved(person, sessionId);
    expect(approval).toMatchObject({ state: "expired" });
    // The hook cannot see the file: never shown as a new one.
    expect(approval.snapshot.toolCall.content).toEqual([
      expect.objectContaining({ oldText: null, _meta: { tapgate: { oldTextWithheld: expect.any(String) } } }),
    ]);
  });

  it("no credentials, an unreachable server, malformed input: each decision deny, exit 0", async () => {
    const input = geminiInput(unique("gemini"), "run_shell_command", { command: "ls" });
    expect(answerOf(await runHook("gemini-hook", input))).toEqual({
      decision: "deny",
      reason: "Tapgate: not signed in — run `tapgate login`",
    });
    const port = await closedPort();
    const unreachable = await runHook("gemini-hook", input, {
      env: { TAPGATE_URL: `http://127.0.0.1:${port}`, TAPGATE_API_KEY: key },
      args: ["--timeout", "5"],
    });
    expect(answerOf(unreachable)).toEqual({ decision: "deny", reason: expect.stringMatching(/^Tapgate: /) });
    expect(answerOf(await runHook("gemini-hook", "{", { env: signedIn() }))).toEqual({
      decision: "deny",
      reason: "Tapgate: the hook input on stdin is not JSON",
    });
    const otherEvent = await runHook("gemini-hook", { ...input, hook_event_name: "AfterTool" }, { env: signedIn() });
    expect(answerOf(otherEvent)).toEqual({ decision: "deny", reason: expect.stringContaining("hook_event_name") });
  });

  it("the default wait stays under Gemini's 60 s kill, and says how to raise both", async () => {
    const run = await runHook("gemini-hook", geminiInput(unique("gemini"), "glob", { pattern: "*" }), {
      args: ["--timeout", "300"],
    });
    expect(run.stderr).toContain("kills hooks after 60 s");
    expect(answerOf(run)).toMatchObject({ decision: "deny" });
  });
});

describe("Claude Code's HTTP hook endpoint on wrangler dev", () => {
  /** What Claude Code sends: a POST of the hook input, the key in the header its settings block names. */
  const postHook = (input: unknown, query = "?timeout=600") =>
    fetch(`${worker.url}/v1/hooks/claude-code${query}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${key}` },
      body: JSON.stringify(input),
    });
  const bash = (sessionId: string) => ({
    session_id: sessionId,
    transcript_path: "/home/ada/.claude/projects/demo/transcript.jsonl",
    cwd: "/home/ada/demo",
    permission_mode: "default",
    hook_event_name: "PreToolUse",
    tool_name: "Bash",
    tool_input: { command: "terraform destroy" },
    tool_use_id: unique("toolu"),
  });

  it("holds the POST until a human decides, and answers the command hook's JSON", async () => {
    const sessionId = unique("claude-http");
    const answer = postHook(bash(sessionId));
    const approval = await person.waitForOne(sessionId);
    expect(approval.snapshot.session).toMatchObject({ agent: { name: "claude-code" }, cwd: "/home/ada/demo" });
    await person.decide(approval, "deny");
    const res = await answer;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: "denied on Tapgate by Ada (web)",
      },
    });
  });

  it("answers a deny before the hook's timeout when nobody decides", async () => {
    const sessionId = unique("claude-http");
    const res = await postHook(bash(sessionId), "?timeout=2");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ hookSpecificOutput: { permissionDecision: "deny" } });
    expect(await waitForResolved(person, sessionId)).toMatchObject({ state: "expired", reason: "expired" });
  });
});

describe("a human's reason on a deny", () => {
  it("is appended to who denied, when the decision carried one (`_meta.tapgate.message`)", () => {
    const decided = { approvalId: "apr_1", reason: "decided", decidedBy: { name: "Sam", device: "Pixel 8" } };
    expect(denyReason({ ...decided, message: "not on a Friday" }, 1)).toBe(
      "denied on Tapgate by Sam (Pixel 8): not on a Friday",
    );
    expect(denyReason({ ...decided, message: "  " }, 1)).toBe("denied on Tapgate by Sam (Pixel 8)");
  });
});
