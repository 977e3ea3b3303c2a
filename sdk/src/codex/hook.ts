/**
 * OpenAI Codex `PermissionRequest` hook ↔ ACP: the hook input as Codex's published schema has it
 * (`codex-rs/hooks/schema/generated/permission-request.command.input.schema.json`) → the
 * `session/request_permission` params Tapgate relays, and a decision → the hook's JSON answer
 * (`permission-request.command.output.schema.json`). Pure.
 *
 * Codex asks this hook before its own approval prompt, for `Bash` (a shell command) and
 * `NetworkAccess` (a command that wants the network). An answer without a decision, a failed
 * hook or a non-zero exit other than 2 lets Codex's own approval flow continue; so every failure
 * here is an explicit `deny`.
 */
import { z } from "zod";
import { HOOK_OPTIONS, type HookDecision } from "../hooks/decision.js";
import { summarizeAs, titleOf } from "../hooks/request.js";
import type { RequestPermissionParams } from "../protocol.js";

export const CODEX_TOOLS = ["Bash", "NetworkAccess"] as const;

/** The schema's required fields; unknown fields (later Codex versions, subagent ids) pass. */
export const codexInputSchema = z.looseObject({
  session_id: z.string().min(1),
  turn_id: z.string(),
  transcript_path: z.string().nullable(),
  cwd: z.string().min(1),
  hook_event_name: z.literal("PermissionRequest"),
  model: z.string(),
  permission_mode: z.string(),
  tool_name: z.enum(CODEX_TOOLS),
  tool_input: z.looseObject({ command: z.string(), description: z.string().optional() }),
});
export type CodexInput = z.infer<typeof codexInputSchema>;

export function toCodexRequest(input: CodexInput, sessionId: string, toolCallId: string): RequestPermissionParams {
  const { tool_name: tool, tool_input: args } = input;
  return {
    sessionId,
    toolCall: {
      toolCallId,
      title: titleOf(tool, summarizeAs("command", args.command)),
      kind: tool === "Bash" ? "execute" : "fetch",
      status: "pending",
      rawInput: args,
    },
    options: [...HOOK_OPTIONS],
  };
}

/** `hookSpecificOutput.decision`: `allow`, or `deny` with the message Codex shows. */
export function codexOutput(decision: HookDecision): Record<string, unknown> {
  const verdict = decision.allow ? { behavior: "allow" } : { behavior: "deny", message: decision.reason };
  return { hookSpecificOutput: { hookEventName: "PermissionRequest", decision: verdict } };
}
