import { describe, expect, it } from "vitest";
import { type GeminiInput, toGeminiRequest } from "./hook.js";

const input = (tool_name: string, tool_input: Record<string, unknown>): GeminiInput => ({
  session_id: "s1",
  hook_event_name: "BeforeTool",
  tool_name,
  tool_input,
});

describe("toGeminiRequest: Gemini CLI's current tool names and arguments", () => {
  it.each([
    ["read_file", { file_path: "/repo/.env" }, "read", "read_file: /repo/.env", "/repo/.env"],
    ["list_directory", { dir_path: "/repo/src" }, "read", "list_directory: /repo/src", "/repo/src"],
    ["grep_search", { pattern: "API_KEY", dir_path: "/repo" }, "search", "grep_search: API_KEY", undefined],
    ["run_shell_command", { command: "rm -rf build" }, "execute", "run_shell_command: rm …", undefined],
  ])("%s", (tool, args, kind, title, path) => {
    const { toolCall } = toGeminiRequest(input(tool, args), "s1", "t1");
    expect(toolCall.kind).toBe(kind);
    expect(toolCall.title).toBe(title);
    expect(toolCall.locations).toEqual(path ? [{ path }] : undefined);
    expect(toolCall.rawInput).toEqual(args);
  });

  it("a tool it does not know is `other`, titled by its first string argument", () => {
    const { toolCall } = toGeminiRequest(input("mcp_github_merge", { repo: "acme/api", n: 3 }), "s1", "t1");
    expect(toolCall.kind).toBe("other");
    expect(toolCall.title).toBe("mcp_github_merge: acme/api");
  });
});
