import { describe, expect, it } from "vitest";
import { decisionFrom } from "../hooks/decision.js";
import { requestPermissionParamsSchema } from "../protocol.js";
import { type CodexInput, codexInputSchema, codexOutput, DENY_STOP_OPTION, toCodexRequest } from "./hook.js";

const input = (extra: Record<string, unknown> = {}): CodexInput =>
  codexInputSchema.parse({
    session_id: "s1",
    turn_id: "t1",
    transcript_path: null,
    cwd: "/repo",
    hook_event_name: "PermissionRequest",
    model: "gpt-5-codex",
    permission_mode: "default",
    tool_name: "Bash",
    tool_input: { command: "npm publish" },
    ...extra,
  });

const textOf = (content: unknown) => (content as Array<{ content: { text: string } }> | undefined)?.[0]?.content.text;

/** A human's decision as the service answers it: `selected` with `_meta.tapgate.reason: "decided"`. */
const decided = (optionId: string) =>
  decisionFrom(
    {
      outcome: { outcome: "selected", optionId },
      _meta: { tapgate: { approvalId: "apr_1", reason: "decided", decidedBy: { name: "Ada", device: "web" } } },
    },
    { waitedMs: 1000, timeoutMs: 540_000 },
  );

describe("toCodexRequest: approval_context on the card", () => {
  it("shows the sandbox escalation, the extra file and network permissions and the justification, and keeps it whole", () => {
    const approvalContext = {
      sandbox_permissions: "require_escalated",
      additional_permissions: {
        file_system: { read: ["/etc/npmrc"], write: ["/home/ada/.npm"] },
        network: { enabled: true },
      },
      justification: "publishing needs the registry",
      future_field: 1,
    };
    const request = toCodexRequest(input({ approval_context: approvalContext }), "s1", "c1");
    expect(textOf(request.toolCall.content)).toBe(
      [
        "Asks to run outside the sandbox (sandbox escalation)",
        "Asks to read: /etc/npmrc",
        "Asks to write: /home/ada/.npm",
        "Asks for network access",
        "Codex's justification: publishing needs the registry",
      ].join("\n"),
    );
    expect(request._meta).toEqual({ codex: { approvalContext } });
    // What the gate reads: still a valid request.
    expect(requestPermissionParamsSchema.safeParse(request).success).toBe(true);
  });

  it("a context of a shape it does not know is kept and said so, never refused", () => {
    const request = toCodexRequest(input({ approval_context: { justification: { nested: true } } }), "s1", "c1");
    expect(textOf(request.toolCall.content)).toMatch(/shape Tapgate does not know/);
    expect(request._meta).toEqual({ codex: { approvalContext: { justification: { nested: true } } } });
  });

  it("without a context the card is the command alone", () => {
    const request = toCodexRequest(input(), "s1", "c1");
    expect(request.toolCall.content).toBeUndefined();
    expect(request._meta).toBeUndefined();
  });

  it("offers Allow once, Deny, then Deny and stop the turn: the fail-closed answer is the plain deny", () => {
    const { options } = toCodexRequest(input(), "s1", "c1");
    expect(options.map((o) => [o.optionId, o.kind])).toEqual([
      ["allow", "allow_once"],
      ["deny", "reject_once"],
      ["deny_stop", "reject_once"],
    ]);
  });
});

describe("codexOutput: Deny and stop the turn", () => {
  it("a human's deny_stop is a deny with interrupt: true", () => {
    expect(codexOutput(decided(DENY_STOP_OPTION.optionId))).toEqual({
      hookSpecificOutput: {
        hookEventName: "PermissionRequest",
        decision: { behavior: "deny", message: "denied on Tapgate by Ada (web)", interrupt: true },
      },
    });
  });

  it("a plain deny, an expiry or an allow never carries interrupt", () => {
    expect(codexOutput(decided("deny")).hookSpecificOutput).toEqual({
      hookEventName: "PermissionRequest",
      decision: { behavior: "deny", message: "denied on Tapgate by Ada (web)" },
    });
    const expired = decisionFrom(
      {
        outcome: { outcome: "selected", optionId: "deny" },
        _meta: { tapgate: { approvalId: "a", reason: "expired" } },
      },
      { waitedMs: 540_000, timeoutMs: 540_000 },
    );
    expect(JSON.stringify(codexOutput(expired))).not.toContain("interrupt");
    expect(codexOutput(decided("allow")).hookSpecificOutput).toEqual({
      hookEventName: "PermissionRequest",
      decision: { behavior: "allow" },
    });
  });
});
