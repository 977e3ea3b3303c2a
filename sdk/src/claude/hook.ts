/**
 * Claude Code hooks ↔ ACP: turns a `PreToolUse` / `PermissionRequest` hook input into the ACP
 * `session/request_permission` params Tapgate relays, and a decision into the hook's JSON answer.
 * Pure: the only I/O (reading a file that `Write` would overwrite, `cli/old-text.ts`) is passed in.
 *
 * Hook contract (code.claude.com/docs/en/hooks): stdin carries `session_id`, `transcript_path`,
 * `cwd`, `permission_mode`, `hook_event_name`, `tool_name`, `tool_input` and, for `PreToolUse`
 * only, `tool_use_id`. Claude reads the JSON answer from stdout when the command exits 0.
 */
import { z } from "zod";
import { HOOK_OPTIONS, type HookDecision } from "../hooks/decision.js";
import {
  type SummaryStyle,
  sanitizeSessionId as sanitize,
  stringOf as str,
  summarizeAs,
  titleOf,
} from "../hooks/request.js";
import type { RequestPermissionParams, ToolCallUpdate } from "../protocol.js";

export const HOOK_EVENTS = ["PreToolUse", "PermissionRequest"] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

export const hookInputSchema = z.looseObject({
  session_id: z.string().min(1),
  transcript_path: z.string().optional(),
  cwd: z.string().optional(),
  permission_mode: z.string().optional(),
  hook_event_name: z.enum(HOOK_EVENTS),
  tool_name: z.string().min(1),
  tool_input: z.record(z.string(), z.unknown()),
  tool_use_id: z.string().min(1).max(256).optional(),
  /** Set when a subagent (or an agent-team teammate) asks: Claude's id and type for it. */
  agent_id: z.string().min(1).max(256).optional(),
  agent_type: z.string().min(1).max(128).optional(),
});
export type HookInput = z.infer<typeof hookInputSchema>;

type ToolKind = NonNullable<ToolCallUpdate["kind"]>;
type Content = NonNullable<ToolCallUpdate["content"]>[number];
type Location = NonNullable<ToolCallUpdate["locations"]>[number];

const KIND_BY_TOOL: Record<string, ToolKind> = {
  Bash: "execute",
  Edit: "edit",
  MultiEdit: "edit",
  Write: "edit",
  NotebookEdit: "edit",
  Read: "read",
  WebFetch: "fetch",
  WebSearch: "fetch",
  Grep: "search",
  Glob: "search",
};

/** The argument a human needs to recognise the call; other tools fall back to their first string argument. */
const SUMMARY_FIELD: Record<string, string> = {
  Bash: "command",
  Edit: "file_path",
  MultiEdit: "file_path",
  Write: "file_path",
  Read: "file_path",
  NotebookEdit: "notebook_path",
  WebFetch: "url",
  WebSearch: "query",
  Grep: "pattern",
  Glob: "pattern",
  Task: "description",
  Agent: "description",
};

export const toolKind = (toolName: string): ToolKind => KIND_BY_TOOL[toolName] ?? "other";

const STYLE_BY_TOOL: Record<string, SummaryStyle> = { Bash: "command", WebFetch: "url" };

/** The argument a human recognises, on one line, without what tends to hold secrets (`summarizeAs`). */
export function summarize(toolName: string, input: Record<string, unknown>): string {
  const field = SUMMARY_FIELD[toolName];
  const raw = (field ? str(input[field]) : undefined) ?? Object.values(input).find((v) => typeof v === "string");
  return summarizeAs(STYLE_BY_TOOL[toolName] ?? "text", str(raw) ?? "");
}

export const title = (toolName: string, input: Record<string, unknown>): string =>
  titleOf(toolName, summarize(toolName, input));

/** The path the tool touches, for ACP `locations`. */
function toolPath(toolName: string, input: Record<string, unknown>): string | undefined {
  if (toolName === "NotebookEdit") return str(input.notebook_path);
  if (toolName === "Grep" || toolName === "Glob") return str(input.path);
  return str(input.file_path);
}

export function locations(toolName: string, input: Record<string, unknown>): Location[] {
  const path = toolPath(toolName, input);
  if (!path) return [];
  const line = toolName === "Read" && typeof input.offset === "number" ? input.offset : undefined;
  return [line !== undefined && Number.isInteger(line) && line >= 0 ? { path, line } : { path }];
}

/** Why a file's old text is not on the card: shown there as "old content withheld". */
export interface Withheld {
  withheld: string;
}

/** A file's current text; null when there is no such file; `{withheld}` when it may not or cannot be shown. */
export type ReadExisting = (path: string) => string | null | Withheld;

/**
 * The marker a diff carries when its old text was withheld (`oldText` is then null, which ACP
 * alone would read as a new file): `_meta.tapgate.oldTextWithheld`, the reason. The card renders it.
 */
export const withheldMeta = (reason: string) => ({ tapgate: { oldTextWithheld: reason } });

/**
 * ACP `diff` blocks wherever the old and new text are known. A `Write` over an existing file shows
 * that file as the old text; `oldText: null` means a new file, unless the diff carries the
 * withheld marker (outside `cwd`, a secret-looking path, too big, unreadable).
 */
export function diffs(toolName: string, input: Record<string, unknown>, readExisting: ReadExisting): Content[] {
  const path = str(input.file_path);
  if (!path) return [];
  const diff = (oldText: string | null, newText: string): Content => ({ type: "diff", path, oldText, newText });
  if (toolName === "Edit") {
    const [oldText, newText] = [str(input.old_string), str(input.new_string)];
    return oldText !== undefined && newText !== undefined ? [diff(oldText, newText)] : [];
  }
  if (toolName === "MultiEdit" && Array.isArray(input.edits)) {
    return input.edits.flatMap((e: unknown) => {
      const edit = e && typeof e === "object" ? (e as Record<string, unknown>) : {};
      const [oldText, newText] = [str(edit.old_string), str(edit.new_string)];
      return oldText !== undefined && newText !== undefined ? [diff(oldText, newText)] : [];
    });
  }
  if (toolName === "Write") {
    const newText = str(input.content);
    if (newText === undefined) return [];
    const old = readExisting(path);
    if (old === null || typeof old === "string") return [diff(old, newText)];
    return [{ ...diff(null, newText), _meta: withheldMeta(old.withheld) }];
  }
  return [];
}

/** Session ids are 1-128 of [A-Za-z0-9._:-] (Claude's UUIDs already fit); anything else is mapped into that. */
export const sanitizeSessionId = (id: string): string => sanitize(id, "claude-code");

/** Claude's `tool_use_id` (PreToolUse), else a generated `claude-<uuid>`. */
export const toolCallIdOf = (input: HookInput): string => input.tool_use_id ?? `claude-${crypto.randomUUID()}`;

export function toPermissionRequest(
  input: HookInput,
  sessionId: string,
  toolCallId: string,
  readExisting: ReadExisting,
): RequestPermissionParams {
  const { tool_name: tool, tool_input: args } = input;
  const content = diffs(tool, args, readExisting);
  const where = locations(tool, args);
  const subagent = subagentMeta(input);
  return {
    sessionId,
    toolCall: {
      toolCallId,
      title: title(tool, args),
      kind: toolKind(tool),
      status: "pending",
      ...(content.length ? { content } : {}),
      ...(where.length ? { locations: where } : {}),
      rawInput: args,
      ...(subagent ? { _meta: subagent } : {}),
    },
    options: [...HOOK_OPTIONS],
    // Claude Code runs an allow's `updatedInput` instead of the tool input it asked about (`hookOutput`).
    _meta: { tapgate: { acceptsEdits: true } },
  };
}

/**
 * A subagent's request names it where claude-code-acp names one (`toolCall._meta.claudeCode`), so
 * the card and history say which subagent asked (`subagentOf`).
 */
function subagentMeta(input: HookInput): Record<string, unknown> | undefined {
  if (!input.agent_id && !input.agent_type) return undefined;
  return {
    claudeCode: {
      ...(input.agent_id ? { agentId: input.agent_id } : {}),
      ...(input.agent_type ? { agentType: input.agent_type } : {}),
    },
  };
}

/** The JSON Claude Code reads from stdout, in the shape each event expects. */
export function hookOutput(event: HookEvent, decision: HookDecision): Record<string, unknown> {
  // An edited allow: Claude Code replaces the whole tool input with `updatedInput`, in either event's answer.
  const edited = decision.allow && decision.updatedInput ? { updatedInput: decision.updatedInput } : {};
  if (event === "PermissionRequest") {
    const verdict = decision.allow ? { behavior: "allow", ...edited } : { behavior: "deny", message: decision.reason };
    return { hookSpecificOutput: { hookEventName: event, decision: verdict } };
  }
  return {
    hookSpecificOutput: {
      hookEventName: event,
      permissionDecision: decision.allow ? "allow" : "deny",
      permissionDecisionReason: decision.reason,
      ...edited,
    },
  };
}

/** The hook event a payload names, if it is one Tapgate answers. */
export function eventOf(input: unknown): HookEvent | undefined {
  const name = input && typeof input === "object" ? (input as Record<string, unknown>).hook_event_name : undefined;
  return HOOK_EVENTS.find((e) => e === name);
}

/** The answer for whatever the hook received: in its event's shape, or undefined when the event is unknown. */
export function answerFor(input: unknown, decision: HookDecision): Record<string, unknown> | undefined {
  const event = eventOf(input);
  return event ? hookOutput(event, decision) : undefined;
}
