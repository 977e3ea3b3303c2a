/**
 * Claude Code's HTTP hook endpoint in workerd: payloads shaped as Claude Code posts them, held
 * until a human decides, and a 200 deny (never a non-2xx or an empty 2xx) on every failure.
 */
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import app from "../../worker/index";
import { HOOK_BODY_BYTES, holdFor } from "../../worker/routes/hooks";
import { createKey, decide, json, ORIGIN, pendingApprovals, signUp, unique } from "./helpers";

function preToolUse(sessionId: string, toolInput: Record<string, unknown> = { command: "git push origin main" }) {
  return {
    session_id: sessionId,
    transcript_path: "/home/ada/.claude/projects/demo/transcript.jsonl",
    cwd: "/home/ada/demo",
    permission_mode: "default",
    hook_event_name: "PreToolUse",
    tool_name: "Bash",
    tool_input: toolInput,
    tool_use_id: unique("toolu"),
  };
}

function post(body: unknown, opts: { key?: string; authorization?: string; query?: string } = {}) {
  const headers = new Headers({ "Content-Type": "application/json" });
  const authorization = opts.authorization ?? (opts.key ? `Bearer ${opts.key}` : undefined);
  if (authorization !== undefined) headers.set("Authorization", authorization);
  return SELF.fetch(`${ORIGIN}/v1/hooks/claude-code${opts.query ?? "?timeout=600"}`, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** Waits for the session's one pending approval (the index is written just after the request). */
async function pendingOf(owner: Awaited<ReturnType<typeof signUp>>, sessionId: string): Promise<Approval> {
  for (;;) {
    const [approval] = await pendingApprovals(owner, sessionId);
    if (approval) return approval;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

async function denial(res: Response) {
  expect(res.status).toBe(200);
  return json(res);
}

describe("POST /v1/hooks/claude-code", () => {
  it("PreToolUse: the card shows the command, cwd and Claude Code; a human's allow answers allow", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("claude-http");
    const input = preToolUse(sessionId);
    const answer = post(input, { key });
    const approval = await pendingOf(owner, sessionId);
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
    // The card expires just before the hold ends: 600 s less the margin, less a second.
    expect(approval.expiresAt - approval.createdAt).toBe(594_000);
    expect((await decide(owner, approval, "allow")).status).toBe(200);
    const res = await answer;
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "allow",
        permissionDecisionReason: "allowed on Tapgate",
      },
    });
  });

  it("PermissionRequest: a human's deny answers the decision object with who denied", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("claude-http");
    const { tool_use_id: _, ...input } = preToolUse(sessionId, { file_path: "/home/ada/demo/a.ts", content: "x" });
    const answer = post({ ...input, hook_event_name: "PermissionRequest", tool_name: "Write" }, { key });
    const approval = await pendingOf(owner, sessionId);
    expect(approval.snapshot.toolCall.toolCallId).toMatch(/^claude-[0-9a-f-]{36}$/);
    // The Worker cannot read the agent's files: the old text is withheld, never shown as a new file.
    expect(approval.snapshot.toolCall.content).toEqual([
      {
        type: "diff",
        path: "/home/ada/demo/a.ts",
        oldText: null,
        newText: "x",
        _meta: { tapgate: { oldTextWithheld: "the HTTP hook cannot read the agent's files" } },
      },
    ]);
    await decide(owner, approval, "deny");
    expect(await denial(await answer)).toEqual({
      hookSpecificOutput: {
        hookEventName: "PermissionRequest",
        decision: { behavior: "deny", message: "denied on Tapgate by Ada (web)" },
      },
    });
  });

  it("no decision before the hook's timeout: a deny, and the card is no longer pending", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("claude-http");
    const res = await post(preToolUse(sessionId), { key, query: "?timeout=2" });
    const body = await denial(res);
    expect(body).toMatchObject({
      hookSpecificOutput: {
        permissionDecision: "deny",
        permissionDecisionReason: expect.stringMatching(/^Tapgate: .*no decision within 1 s$/),
      },
    });
    const [approval] = await pendingApprovals(owner, sessionId);
    expect(approval).toBeUndefined();
  });

  it("no key, an empty key (a variable allowedEnvVars does not list), a bad key: a 200 deny, before the body is read", async () => {
    const input = preToolUse(unique("claude-http"));
    for (const authorization of [undefined, "Bearer ", "Bearer"]) {
      // The body is not read without a key, so its event is unknown: the top-level block every event honours.
      expect(await denial(await post(input, { authorization }))).toEqual({
        decision: "block",
        reason: 'Tapgate: no API key: set TAPGATE_API_KEY and list it in the hook\'s "allowedEnvVars"',
      });
    }
    const bad = await denial(await post(input, { key: `tg_${"x".repeat(43)}` }));
    expect(bad).toMatchObject({ decision: "block", reason: expect.stringContaining("unknown or revoked") });
    // A body too large or not JSON at all is never looked at: the key's problem is the answer.
    for (const body of ["x".repeat(1024 * 1024), "not json"]) {
      const unread = await denial(await post(body, { key: `tg_${"x".repeat(43)}` }));
      expect(unread).toMatchObject({ decision: "block", reason: expect.stringContaining("unknown or revoked") });
    }
  });

  it("a body over 64 KiB is a deny in the event's shape, read no further; at 64 KiB it is held", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const base = preToolUse(unique("claude-http"), { command: "" });
    const room = HOOK_BODY_BYTES - JSON.stringify(base).length;
    const over = await denial(
      await post(preToolUse(unique("claude-http"), { command: "x".repeat(room + 1) }), { key }),
    );
    expect(over).toMatchObject({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: `Tapgate: the hook input is larger than ${HOOK_BODY_BYTES} bytes`,
      },
    });
    const sessionId = unique("claude-http");
    const fits = { ...preToolUse(sessionId, { command: "" }) };
    fits.tool_input = { command: "x".repeat(HOOK_BODY_BYTES - JSON.stringify(fits).length) };
    expect(JSON.stringify(fits).length).toBe(HOOK_BODY_BYTES);
    const held = post(fits, { key, query: "?timeout=600" });
    const approval = await pendingOf(owner, sessionId);
    expect((await decide(owner, approval, "deny")).status).toBe(200);
    expect(await denial(await held)).toMatchObject({ hookSpecificOutput: { permissionDecision: "deny" } });
  });

  it("a host the server does not answer for is a 200 deny, never 421 (Claude would carry on)", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const res = await app.request(
      "https://rebound.example/v1/hooks/claude-code",
      {
        method: "POST",
        headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
        body: JSON.stringify(preToolUse(unique("claude-http"))),
      },
      { ...env, APP_ORIGIN: ORIGIN },
    );
    expect(await denial(res)).toEqual({
      decision: "block",
      reason: "Tapgate: this server answers only for tapgate.test",
    });
    // Other routes keep their 421.
    const other = await app.request("https://rebound.example/v1/health", {}, { ...env, APP_ORIGIN: ORIGIN });
    expect(other.status).toBe(421);
  });

  it("malformed input: a deny in the event's shape when the event is known, else decision block", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const invalid = await denial(
      await post({ hook_event_name: "PermissionRequest", session_id: "s1", tool_input: {} }, { key }),
    );
    expect(invalid).toMatchObject({
      hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny" } },
    });
    expect(JSON.stringify(invalid)).toContain("tool_name");

    expect(await denial(await post("not json", { key }))).toEqual({
      decision: "block",
      reason: "Tapgate: the hook input is not JSON",
    });
    const otherEvent = await denial(await post({ ...preToolUse("s1"), hook_event_name: "PostToolUse" }, { key }));
    expect(otherEvent).toMatchObject({ decision: "block" });

    const twice = '{"session_id":"s1","session_id":"s2"}';
    expect(await denial(await post(twice, { key }))).toMatchObject({
      reason: expect.stringContaining("duplicate key"),
    });

    const huge = preToolUse(unique("claude-http"), { command: "x".repeat(300 * 1024) });
    expect(await denial(await post(huge, { key }))).toMatchObject({
      hookSpecificOutput: { permissionDecision: "deny", permissionDecisionReason: expect.stringContaining("larger") },
    });

    const badTimeout = await denial(await post(preToolUse(unique("claude-http")), { key, query: "?timeout=soon" }));
    expect(badTimeout).toMatchObject({
      hookSpecificOutput: { permissionDecision: "deny", permissionDecisionReason: expect.stringContaining("timeout") },
    });
  });

  it("holds until just before the hook's timeout, and at least the gate's 1 s", () => {
    expect(holdFor(600)).toEqual({ answerByMs: 595_000, lifetimeMs: 594_000 });
    expect(holdFor(30)).toEqual({ answerByMs: 25_000, lifetimeMs: 24_000 });
    expect(holdFor(2)).toEqual({ answerByMs: 1_500, lifetimeMs: 1_250 });
    expect(holdFor(1)).toEqual({ answerByMs: 1_000, lifetimeMs: 1_000 });
  });
});
