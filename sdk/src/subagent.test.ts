import { describe, expect, it } from "vitest";
import type { SessionInfo } from "./approval.js";
import { subagentOf } from "./subagent.js";

const session: SessionInfo = { title: "claude in api", agent: null, host: null, cwd: null };

describe("subagentOf", () => {
  it("names an ACP subagent and its parent session", () => {
    const parent = { sessionId: "p1", title: "fix flaky test", name: "tests", task: "run the suite" };
    expect(subagentOf({ session: { ...session, parent }, toolCall: { toolCallId: "t" } })).toBe(
      "subagent tests of fix flaky test",
    );
    expect(subagentOf({ session: { ...session, parent: { sessionId: "p1" } }, toolCall: { toolCallId: "t" } })).toBe(
      "subagent claude in api of p1",
    );
  });

  it("names a Claude Code subagent by its type, else its id, else the tool call that started it", () => {
    const claude = (claudeCode: Record<string, unknown>) => ({
      session,
      toolCall: { toolCallId: "t", _meta: { claudeCode } },
    });
    expect(subagentOf(claude({ agentId: "a1", agentType: "Explore" }))).toBe("subagent Explore");
    expect(subagentOf(claude({ agentId: "a1" }))).toBe("subagent a1");
    expect(subagentOf(claude({ parentToolUseId: "toolu_01" }))).toBe("subagent of tool call toolu_01");
  });

  it("is null for the main agent's requests", () => {
    expect(subagentOf({ session, toolCall: { toolCallId: "t", _meta: { claudeCode: {} } } })).toBeNull();
    expect(subagentOf({ session, toolCall: { toolCallId: "t" } })).toBeNull();
  });
});
