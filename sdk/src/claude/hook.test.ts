import { describe, expect, it } from "vitest";
import { subagentOf } from "../subagent.js";
import { type HookInput, toPermissionRequest } from "./hook.js";

const input = (extra: Partial<HookInput> = {}): HookInput => ({
  session_id: "s1",
  cwd: "/repo",
  hook_event_name: "PermissionRequest",
  tool_name: "Bash",
  tool_input: { command: "npm test" },
  ...extra,
});
const session = { title: "Claude Code", agent: null, host: null, cwd: "/repo" };

describe("toPermissionRequest: a Claude Code subagent is named on the request", () => {
  it("carries agent_id and agent_type as toolCall._meta.claudeCode, which the card reads", () => {
    const { toolCall } = toPermissionRequest(input({ agent_id: "a-7", agent_type: "Explore" }), "s1", "t1", () => null);
    expect(toolCall._meta).toEqual({ claudeCode: { agentId: "a-7", agentType: "Explore" } });
    expect(subagentOf({ session, toolCall })).toBe("subagent Explore");
  });

  it("the main agent's request carries no _meta", () => {
    const { toolCall } = toPermissionRequest(input(), "s1", "t1", () => null);
    expect(toolCall._meta).toBeUndefined();
    expect(subagentOf({ session, toolCall })).toBeNull();
  });
});
