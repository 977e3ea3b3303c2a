/** `tapgate claude-hook` as Claude Code runs it: a child process, hook JSON on stdin, against `wrangler dev`. */
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, startLocalWorker } from "../../scripts/local-worker.mjs";
import { diffs, sanitizeSessionId, summarize, title, toolKind } from "../../sdk/src/claude/hook";
import { parseTimeout } from "../../sdk/src/hooks/command";
import { denyReason } from "../../sdk/src/hooks/decision";
import { Person, unique } from "./helpers";
import { answerOf, runHook as runAgentHook, waitForResolved } from "./hook-helpers";

let worker: Awaited<ReturnType<typeof startLocalWorker>>;
let person: Person;
let key: string;
beforeAll(async () => {
  worker = await startLocalWorker();
  person = await Person.signUp(worker.url);
  key = (await person.createKey("claude hook tests")).key;
});
afterAll(() => worker?.stop());

const runHook = (input: unknown, opts?: Parameters<typeof runAgentHook>[2]) => runAgentHook("claude-hook", input, opts);

const signedIn = () => ({ TAPGATE_URL: worker.url, TAPGATE_API_KEY: key });

function preToolUse(sessionId: string, tool: string, toolInput: Record<string, unknown>) {
  return {
    session_id: sessionId,
    transcript_path: "/home/ada/.claude/projects/demo/transcript.jsonl",
    cwd: "/home/ada/demo",
    permission_mode: "default",
    hook_event_name: "PreToolUse",
    tool_name: tool,
    tool_input: toolInput,
    tool_use_id: unique("toolu"),
  };
}

describe("tapgate claude-hook against wrangler dev", () => {
  it("PreToolUse Bash: the card shows the command, and a human's allow is an allow", async () => {
    const sessionId = unique("claude");
    const input = preToolUse(sessionId, "Bash", { command: "git push origin main", description: "Push" });
    const run = runHook(input, { env: signedIn() });
    const approval = await person.waitForOne(sessionId);
    expect(approval.snapshot.toolCall).toMatchObject({
      toolCallId: input.tool_use_id,
      title: "Bash: git …",
      kind: "execute",
      rawInput: input.tool_input,
    });
    expect(approval.snapshot.session).toMatchObject({
      title: "Claude Code",
      agent: { name: "claude-code" },
      cwd: "/home/ada/demo",
    });
    expect(approval.options.map((o) => o.kind)).toEqual(["allow_once", "reject_once"]);
    expect((await person.decide(approval, "allow")).status).toBe(200);
    expect(answerOf(await run)).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "allow",
        permissionDecisionReason: "allowed on Tapgate",
      },
    });
  });

  it("a force push hidden in a $((…)) is high-risk at the Worker as wrangler bundles it (babylon left out)", async () => {
    const sessionId = unique("claude");
    const command = "x=$(( `git push -f` ))";
    const run = runHook(preToolUse(sessionId, "Bash", { command, description: "Count" }), { env: signedIn() });
    const approval = await person.waitForOne(sessionId);
    expect(approval.risk).toBe("high");
    expect((await person.decide(approval, "deny")).status).toBe(200);
    expect(answerOf(await run)).toMatchObject({ hookSpecificOutput: { permissionDecision: "deny" } });
  });

  it("PreToolUse Edit: a diff block and kind edit on the card; a human's reject is a deny with a reason", async () => {
    const sessionId = unique("claude");
    const toolInput = {
      file_path: "/home/ada/demo/src/app.ts",
      old_string: "const a = 1;",
      new_string: "const a = 2;",
    };
    const run = runHook(preToolUse(sessionId, "Edit", toolInput), { env: signedIn() });
    const approval = await person.waitForOne(sessionId);
    const fetched = await person.approval(approval.id);
    expect(fetched.snapshot.toolCall).toMatchObject({
      title: "Edit: /home/ada/demo/src/app.ts",
      kind: "edit",
      content: [{ type: "diff", path: toolInput.file_path, oldText: "const a = 1;", newText: "const a = 2;" }],
      locations: [{ path: toolInput.file_path }],
      rawInput: toolInput,
    });
    expect((await person.decide(approval, "deny")).status).toBe(200);
    expect(answerOf(await run)).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: "denied on Tapgate by Ada (web)",
      },
    });
  });

  it("a deny's reason reaches Claude: in permissionDecisionReason, and in a PermissionRequest deny's message", async () => {
    const sessionId = unique("claude");
    const reason = "use `npm run clean` instead";
    const preRun = runHook(preToolUse(sessionId, "Bash", { command: "rm -rf dist" }), { env: signedIn() });
    const first = await person.waitForOne(sessionId);
    expect((await person.decide(first, "deny", reason)).status).toBe(200);
    expect(answerOf(await preRun)).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: `denied on Tapgate by Ada (web): ${reason}`,
      },
    });

    const { tool_use_id: _, ...input } = preToolUse(sessionId, "Bash", { command: "rm -rf dist" });
    const requestRun = runHook({ ...input, hook_event_name: "PermissionRequest" }, { env: signedIn() });
    const second = await person.waitForOne(sessionId);
    expect((await person.decide(second, "deny", reason)).status).toBe(200);
    expect(answerOf(await requestRun)).toEqual({
      hookSpecificOutput: {
        hookEventName: "PermissionRequest",
        decision: { behavior: "deny", message: `denied on Tapgate by Ada (web): ${reason}` },
      },
    });
  });

  it("PermissionRequest: no tool_use_id, a generated call id, and the decision-object answer shape", async () => {
    const sessionId = unique("claude");
    const { tool_use_id: _, ...input } = preToolUse(sessionId, "Bash", { command: "rm -r node_modules" });
    const allowRun = runHook({ ...input, hook_event_name: "PermissionRequest" }, { env: signedIn() });
    const first = await person.waitForOne(sessionId);
    expect(first.snapshot.toolCall.toolCallId).toMatch(/^claude-[0-9a-f-]{36}$/);
    await person.decide(first, "allow");
    expect(answerOf(await allowRun)).toEqual({
      hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow" } },
    });

    const denyRun = runHook({ ...input, hook_event_name: "PermissionRequest" }, { env: signedIn() });
    const second = await person.waitForOne(sessionId);
    await person.decide(second, "deny");
    expect(answerOf(await denyRun)).toEqual({
      hookSpecificOutput: {
        hookEventName: "PermissionRequest",
        decision: { behavior: "deny", message: "denied on Tapgate by Ada (web)" },
      },
    });
  });

  it("--timeout 1: the card expires on the server at the same time, and Claude gets a deny", async () => {
    const sessionId = unique("claude");
    const run = await runHook(preToolUse(sessionId, "Bash", { command: "make deploy" }), {
      args: ["--timeout", "1"],
      env: signedIn(),
    });
    expect(answerOf(run)).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: "Tapgate: expired — no decision within 1 s",
      },
    });
    const approval = await waitForResolved(person, sessionId);
    expect(approval).toMatchObject({ state: "expired", reason: "expired" });
    expect(approval.expiresAt - approval.createdAt).toBe(1_000);
  });

  it("Write and MultiEdit: one diff per edit; a new file has oldText null, an existing one its content", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tapgate-hook-files-"));
    const existing = join(dir, "existing.txt");
    writeFileSync(existing, "old line\n");
    const cases = [
      {
        tool: "MultiEdit",
        input: {
          file_path: existing,
          edits: [
            { old_string: "a", new_string: "b" },
            { old_string: "c", new_string: "d", replace_all: true },
          ],
        },
        content: [
          { type: "diff", path: existing, oldText: "a", newText: "b" },
          { type: "diff", path: existing, oldText: "c", newText: "d" },
        ],
      },
      {
        tool: "Write",
        input: { file_path: join(dir, "new.txt"), content: "hello\n" },
        content: [{ type: "diff", path: join(dir, "new.txt"), oldText: null, newText: "hello\n" }],
      },
      {
        tool: "Write",
        input: { file_path: existing, content: "new line\n" },
        content: [{ type: "diff", path: existing, oldText: "old line\n", newText: "new line\n" }],
      },
    ];
    for (const c of cases) {
      const sessionId = unique("claude");
      const run = runHook({ ...preToolUse(sessionId, c.tool, c.input), cwd: dir }, { env: signedIn() });
      const approval = await person.waitForOne(sessionId);
      expect(approval.snapshot.toolCall).toMatchObject({ kind: "edit", content: c.content, rawInput: c.input });
      await person.decide(approval, "deny");
      expect((await run).code).toBe(0);
    }
  });

  it("Write outside the hook's cwd, through a symlink, or over a secret: the old text is withheld, with why", async () => {
    const root = mkdtempSync(join(tmpdir(), "tapgate-hook-withheld-"));
    const project = join(root, "project");
    mkdirSync(project);
    writeFileSync(join(root, "outside.txt"), "OUTSIDE-SECRET\n");
    writeFileSync(join(project, ".env"), "API_TOKEN=ENV-SECRET\n");
    symlinkSync(join(root, "outside.txt"), join(project, "innocent.txt"));
    const cases = [
      { path: join(root, "outside.txt"), reason: "outside the session's working directory" },
      {
        path: join(project, "innocent.txt"),
        reason: "outside the session's working directory (after following symlinks)",
      },
      { path: join(project, ".env"), reason: "the path looks like it holds secrets" },
    ];
    for (const c of cases) {
      const sessionId = unique("claude");
      const input = { file_path: c.path, content: "new\n" };
      const run = runHook({ ...preToolUse(sessionId, "Write", input), cwd: project }, { env: signedIn() });
      const approval = await person.waitForOne(sessionId);
      expect(approval.snapshot.toolCall.content).toEqual([
        {
          type: "diff",
          path: c.path,
          oldText: null,
          newText: "new\n",
          _meta: { tapgate: { oldTextWithheld: c.reason } },
        },
      ]);
      expect(JSON.stringify(approval)).not.toMatch(/OUTSIDE-SECRET|ENV-SECRET/);
      await person.decide(approval, "deny");
      expect((await run).code).toBe(0);
    }
  });

  it("a session id outside the allowed charset is mapped into it", async () => {
    const raw = `${unique("claude")}/with spaces`;
    const run = runHook(preToolUse(raw, "Read", { file_path: "/etc/hosts", offset: 3 }), { env: signedIn() });
    const approval = await person.waitForOne(sanitizeSessionId(raw));
    expect(approval.sessionId).toBe(raw.replace(/[/ ]/g, "_"));
    expect(approval.snapshot.toolCall).toMatchObject({
      title: "Read: /etc/hosts",
      kind: "read",
      locations: [{ path: "/etc/hosts", line: 3 }],
    });
    await person.decide(approval, "allow");
    expect(answerOf(await run)).toMatchObject({ hookSpecificOutput: { permissionDecision: "allow" } });
  });

  it("plain http:// to another machine: a deny that says so, and the key is never sent", async () => {
    const run = await runHook(preToolUse(unique("claude"), "Bash", { command: "ls" }), {
      env: { TAPGATE_URL: "http://192.0.2.1:8787", TAPGATE_API_KEY: key },
    });
    expect(answerOf(run)).toMatchObject({
      hookSpecificOutput: {
        permissionDecision: "deny",
        permissionDecisionReason: expect.stringContaining("Tapgate: refusing plain http:// to 192.0.2.1:8787"),
      },
    });
  });

  it("no credentials: a deny that names `tapgate login`, without touching the network", async () => {
    const run = await runHook(preToolUse(unique("claude"), "Bash", { command: "ls" }));
    expect(answerOf(run)).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: "Tapgate: not signed in — run `tapgate login`",
      },
    });
  });

  it("bad input denies: invalid fields and a bad --timeout answer in the event's shape, unknown events exit 2", async () => {
    const invalid = await runHook(
      { hook_event_name: "PermissionRequest", session_id: "s1", tool_input: {} },
      {
        env: signedIn(),
      },
    );
    expect(answerOf(invalid)).toMatchObject({
      hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny" } },
    });
    expect(JSON.stringify(JSON.parse(invalid.stdout))).toContain("tool_name");

    const badTimeout = await runHook(preToolUse(unique("claude"), "Bash", { command: "ls" }), {
      args: ["--timeout", "soon"],
      env: signedIn(),
    });
    expect(answerOf(badTimeout)).toMatchObject({ hookSpecificOutput: { permissionDecision: "deny" } });

    const garbage = await runHook("not json", { env: signedIn() });
    expect(garbage).toMatchObject({ code: 2, stdout: "" });
    expect(garbage.stderr).toContain("not JSON");
  });
});

describe("the Claude tool mapping", () => {
  it("maps tool names to ACP kinds, anything unknown to other", () => {
    expect(
      ["Bash", "Edit", "MultiEdit", "Write", "NotebookEdit", "Read", "WebFetch", "WebSearch", "Grep", "Glob"].map(
        toolKind,
      ),
    ).toEqual(["execute", "edit", "edit", "edit", "edit", "read", "fetch", "fetch", "search", "search"]);
    expect(toolKind("mcp__github__create_issue")).toBe("other");
  });

  it("a Write's diff: the old text, a new file (null), or withheld with the marker the card shows", () => {
    const write = { file_path: "/p/a.txt", content: "new" };
    expect(diffs("Write", write, () => "old")).toEqual([
      { type: "diff", path: "/p/a.txt", oldText: "old", newText: "new" },
    ]);
    expect(diffs("Write", write, () => null)).toEqual([
      { type: "diff", path: "/p/a.txt", oldText: null, newText: "new" },
    ]);
    expect(diffs("Write", write, () => ({ withheld: "why" }))).toEqual([
      { type: "diff", path: "/p/a.txt", oldText: null, newText: "new", _meta: { tapgate: { oldTextWithheld: "why" } } },
    ]);
  });

  it("summarises the argument a human recognises, on one line, within 80 characters", () => {
    expect(title("WebFetch", { url: "https://example.com/a?token=s3cret", prompt: "x" })).toBe("WebFetch: example.com");
    expect(title("Grep", { pattern: "TODO.*fix", path: "/src" })).toBe("Grep: TODO.*fix");
    expect(title("mcp__x__y", { n: 1, query: "weather" })).toBe("mcp__x__y: weather");
    expect(title("TodoWrite", { todos: [] })).toBe("TodoWrite");
    // Titles can reach a lock screen: a command keeps only its program.
    expect(summarize("Bash", { command: 'curl -H "Authorization: Bearer sk-123" x' })).toBe("curl …");
    expect(summarize("Bash", { command: "ls" })).toBe("ls");
    const long = summarize("Read", { file_path: `/src/${"é".repeat(200)}` });
    expect(Array.from(long)).toHaveLength(80);
    expect(long.endsWith("…")).toBe(true);
  });

  it("keeps session ids inside [A-Za-z0-9._:-]{1,128}", () => {
    expect(sanitizeSessionId("0b0c7a1e-3f4d-4a59-9b1a-2f3c4d5e6f70")).toBe("0b0c7a1e-3f4d-4a59-9b1a-2f3c4d5e6f70");
    expect(sanitizeSessionId("a/b c")).toBe("a_b_c");
    expect(sanitizeSessionId("x".repeat(300))).toHaveLength(128);
  });

  it("reads the timeout from --timeout, then TAPGATE_HOOK_TIMEOUT, else the hook's default", () => {
    const parse = (args: string[], env: string | undefined) => parseTimeout(args, env, 540, "claude-hook");
    expect(parse([], undefined)).toBe(540);
    expect(parse([], "30")).toBe(30);
    expect(parse(["--timeout", "5"], "30")).toBe(5);
    expect(parse(["--timeout=7"], undefined)).toBe(7);
    expect(parse(["--timeout", "0"], undefined)).toMatch(/invalid timeout/);
    expect(parse(["--bogus"], undefined)).toMatch(/tapgate claude-hook \[--timeout SECONDS\]/);
  });
});

describe("the deny reason, from the answer's _meta.tapgate", () => {
  const meta = (reason: string, decidedBy?: { name: string; device: string }) => ({
    approvalId: "apr_1",
    reason,
    ...(decidedBy ? { decidedBy } : {}),
  });

  it("names who denied and where, or says why nobody did", () => {
    expect(denyReason(meta("decided", { name: "Sam", device: "Pixel 8" }), 5_000)).toBe(
      "denied on Tapgate by Sam (Pixel 8)",
    );
    expect(denyReason(meta("decided"), 5_000)).toBe("denied on Tapgate by a human reviewer");
    expect(denyReason({ ...meta("decided"), message: "not on main" }, 5_000)).toBe(
      "denied on Tapgate by a human reviewer: not on main",
    );
    expect(denyReason(meta("expired"), 600_400)).toBe("Tapgate: expired — no decision within 600 s");
    expect(denyReason(meta("agent_disconnected"), 1)).toBe("Tapgate: agent disconnected before anyone decided");
    expect(denyReason(meta("key_revoked"), 1)).toBe("Tapgate: this API key was revoked — run `tapgate login`");
    expect(denyReason(meta("service_restart"), 1)).toContain("restarted");
    expect(denyReason(meta("session_cancelled"), 1)).toBe("Tapgate: the request was cancelled");
    expect(denyReason(meta("something_new"), 1)).toBe("Tapgate: denied (something_new)");
  });
});

describe("tapgate claude-hook: the Elicitation event (an MCP server asking the user)", () => {
  /** Shaped as Claude Code documents the `Elicitation` hook input. */
  const elicitation = (sessionId: string, extra: Record<string, unknown> = {}) => ({
    session_id: sessionId,
    transcript_path: "/tmp/transcript.jsonl",
    cwd: ROOT,
    permission_mode: "default",
    hook_event_name: "Elicitation",
    mcp_server_name: "deploy-server",
    message: "Which environment should I deploy to?",
    mode: "form",
    requested_schema: {
      type: "object",
      properties: {
        environment: { type: "string", title: "Environment", enum: ["staging", "production"] },
        replicas: { type: "integer", title: "Replicas", minimum: 1, maximum: 5, default: 2 },
      },
      required: ["environment"],
    },
    ...extra,
  });

  it("a form answered on the phone becomes the hook's accept with the content", async () => {
    const sessionId = unique("claude-elicit");
    const run = runHook(elicitation(sessionId), { env: signedIn() });
    const approval = await person.waitForOne(sanitizeSessionId(sessionId));
    expect(approval).toMatchObject({
      type: "elicitation",
      snapshot: {
        elicitation: { mode: "form", message: "Which environment should I deploy to?" },
        meta: { "claude-code": { mcpServerName: "deploy-server" } },
        session: { agent: { name: "claude-code" }, cwd: ROOT },
      },
    });
    const content = { environment: "staging", replicas: 3 };
    const decided = await person.fetch(`/v1/approvals/${approval.id}/decision`, {
      method: "POST",
      body: JSON.stringify({ action: "accept", content, requestHash: approval.requestHash }),
    });
    expect(decided.status).toBe(200);
    expect(answerOf(await run)).toEqual({
      hookSpecificOutput: { hookEventName: "Elicitation", action: "accept", content },
    });
  });

  it("decline on the phone is the hook's decline, without content", async () => {
    const sessionId = unique("claude-elicit");
    const run = runHook(elicitation(sessionId), { env: signedIn() });
    const approval = await person.waitForOne(sanitizeSessionId(sessionId));
    await person.fetch(`/v1/approvals/${approval.id}/decision`, {
      method: "POST",
      body: JSON.stringify({ action: "decline", requestHash: approval.requestHash }),
    });
    expect(answerOf(await run)).toEqual({ hookSpecificOutput: { hookEventName: "Elicitation", action: "decline" } });
  });

  it("fails closed to cancel: not signed in, a URL that is not https, no answer in time", async () => {
    const cancel = { hookSpecificOutput: { hookEventName: "Elicitation", action: "cancel" } };
    const signedOut = await runHook(elicitation(unique("claude-elicit")));
    expect(answerOf(signedOut)).toEqual(cancel);
    expect(signedOut.stderr).toContain("not signed in");
    const plainHttp = await runHook(
      elicitation(unique("claude-elicit"), { mode: "url", url: "http://example.com/login", elicitation_id: "e1" }),
      { env: signedIn() },
    );
    expect(answerOf(plainHttp)).toEqual(cancel);
    expect(plainHttp.stderr).toContain("Tapgate cannot show this question");
    const sessionId = unique("claude-elicit");
    const late = runHook(elicitation(sessionId), { env: signedIn(), args: ["--timeout", "1"] });
    expect(answerOf(await late)).toEqual(cancel);
  });
});
