/**
 * Gemini CLI `BeforeTool` hook ↔ ACP: the hook input as `docs/hooks/reference.md` has it (the
 * base fields plus `tool_name`, `tool_input`, `mcp_context?`) → the `session/request_permission`
 * params Tapgate relays, and a decision → `{decision: "allow" | "deny", reason}`. Pure.
 *
 * Gemini kills a hook after its `timeout` (milliseconds, default 60 000) and treats that, like
 * any exit code but 0 and 2, as a warning: the tool goes on to Gemini's own confirmation. So
 * every failure here is an explicit `deny` on exit 0.
 */
import { z } from "zod";
import { withheldMeta } from "../claude/hook.js";
import { HOOK_OPTIONS, type HookDecision } from "../hooks/decision.js";
import { type SummaryStyle, stringOf, summarizeAs, titleOf } from "../hooks/request.js";
import type { RequestPermissionParams, ToolCallUpdate } from "../protocol.js";

export const geminiInputSchema = z.looseObject({
  session_id: z.string().min(1),
  transcript_path: z.string().optional(),
  cwd: z.string().optional(),
  hook_event_name: z.literal("BeforeTool"),
  timestamp: z.string().optional(),
  tool_name: z.string().min(1),
  tool_input: z.record(z.string(), z.unknown()),
  mcp_context: z.record(z.string(), z.unknown()).optional(),
});
export type GeminiInput = z.infer<typeof geminiInputSchema>;

type ToolKind = NonNullable<ToolCallUpdate["kind"]>;

/**
 * Gemini's built-in tools as its tools reference names them today (`read_file {file_path}`,
 * `list_directory {dir_path}`, `grep_search`): the ACP kind, the argument a human recognises, the
 * path touched. Any other tool (an MCP one included) is `other`, titled by its first string.
 */
const TOOLS: Record<string, { kind: ToolKind; field: string; style?: SummaryStyle; path?: string }> = {
  run_shell_command: { kind: "execute", field: "command", style: "command" },
  write_file: { kind: "edit", field: "file_path", path: "file_path" },
  replace: { kind: "edit", field: "file_path", path: "file_path" },
  read_file: { kind: "read", field: "file_path", path: "file_path" },
  read_many_files: { kind: "read", field: "paths" },
  list_directory: { kind: "read", field: "dir_path", path: "dir_path" },
  glob: { kind: "search", field: "pattern" },
  grep_search: { kind: "search", field: "pattern" },
  web_fetch: { kind: "fetch", field: "prompt", style: "url" },
  google_web_search: { kind: "fetch", field: "query" },
};

export function toGeminiRequest(input: GeminiInput, sessionId: string, toolCallId: string): RequestPermissionParams {
  const { tool_name: tool, tool_input: args } = input;
  const shape = TOOLS[tool];
  const raw = stringOf(shape ? args[shape.field] : undefined) ?? Object.values(args).find((v) => typeof v === "string");
  const path = shape?.path ? stringOf(args[shape.path]) : undefined;
  const content = tool === "replace" ? replaceDiff(args) : tool === "write_file" ? writeDiff(args) : [];
  return {
    sessionId,
    toolCall: {
      toolCallId,
      title: titleOf(tool, summarizeAs(shape?.style ?? "text", stringOf(raw) ?? "")),
      kind: shape?.kind ?? "other",
      status: "pending",
      ...(content.length ? { content } : {}),
      ...(path ? { locations: [{ path }] } : {}),
      rawInput: args,
    },
    options: [...HOOK_OPTIONS],
  };
}

type Content = NonNullable<ToolCallUpdate["content"]>[number];

function replaceDiff(args: Record<string, unknown>): Content[] {
  const [path, oldText, newText] = [stringOf(args.file_path), stringOf(args.old_string), stringOf(args.new_string)];
  return path && oldText !== undefined && newText !== undefined ? [{ type: "diff", path, oldText, newText }] : [];
}

/** The hook cannot see whether the file exists: its old text is marked withheld, never shown as a new file. */
function writeDiff(args: Record<string, unknown>): Content[] {
  const [path, newText] = [stringOf(args.file_path), stringOf(args.content)];
  if (!path || newText === undefined) return [];
  const withheld = withheldMeta("the Gemini CLI hook does not read existing files");
  return [{ type: "diff", path, oldText: null, newText, _meta: withheld }];
}

/** `decision` with the `reason` Gemini sends the model on a deny (and logs on an allow). */
export const geminiOutput = (decision: HookDecision): Record<string, unknown> => ({
  decision: decision.allow ? "allow" : "deny",
  reason: decision.reason,
});
