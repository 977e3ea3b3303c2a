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
 *
 * An `approval_context` (what the command asks beyond its sandbox, and Codex's justification) is
 * shown on the card as a text block and kept whole in the request's `_meta.codex.approvalContext`.
 * Besides Allow once and Deny the card offers "Deny and stop the turn" (`deny_stop`, a
 * `reject_once`): chosen by a human, the deny carries `interrupt: true`.
 */
import { z } from "zod";
import { HOOK_OPTIONS, type HookDecision } from "../hooks/decision.js";
import { summarizeAs, titleOf } from "../hooks/request.js";
import type { RequestPermissionParams } from "../protocol.js";

export const CODEX_TOOLS = ["Bash", "NetworkAccess"] as const;

/**
 * What a command asks beyond its sandbox, as Codex's shell tool names it (`sandbox_permissions`,
 * `additional_permissions`, `justification`): every field optional, unknown fields kept.
 */
export const codexApprovalContextSchema = z.looseObject({
  sandbox_permissions: z.string().optional(),
  additional_permissions: z
    .looseObject({
      file_system: z
        .looseObject({ read: z.array(z.string()).optional(), write: z.array(z.string()).optional() })
        .nullish(),
      network: z.looseObject({ enabled: z.boolean().optional() }).nullish(),
    })
    .nullish(),
  justification: z.string().nullish(),
});

/** The third option of a Codex card: a deny that also stops Codex's turn (`interrupt: true`). */
export const DENY_STOP_OPTION = { optionId: "deny_stop", name: "Deny and stop the turn", kind: "reject_once" } as const;

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
  /** Read by `approvalContextLines`; a shape Tapgate does not know is still kept and shown raw, never refused. */
  approval_context: z.unknown().optional(),
});
export type CodexInput = z.infer<typeof codexInputSchema>;

export function toCodexRequest(input: CodexInput, sessionId: string, toolCallId: string): RequestPermissionParams {
  const { tool_name: tool, tool_input: args, approval_context: context } = input;
  const asked = context == null ? [] : approvalContextLines(context);
  return {
    sessionId,
    toolCall: {
      toolCallId,
      title: titleOf(tool, summarizeAs("command", args.command)),
      kind: tool === "Bash" ? "execute" : "fetch",
      status: "pending",
      rawInput: args,
      ...(asked.length > 0 && { content: [{ type: "content", content: { type: "text", text: asked.join("\n") } }] }),
    },
    options: [...HOOK_OPTIONS, DENY_STOP_OPTION],
    ...(context != null && { _meta: { codex: { approvalContext: context } } }),
  };
}

/** The card's sentences for what the command asks beyond its sandbox, in Codex's order. */
export function approvalContextLines(sent: unknown): string[] {
  const parsed = codexApprovalContextSchema.safeParse(sent);
  if (!parsed.success)
    return ["Codex sent an approval context of a shape Tapgate does not know: see the agent's data below"];
  const { sandbox_permissions: sandbox, additional_permissions: extra, justification } = parsed.data;
  const files = extra?.file_system;
  return [
    sandbox === "require_escalated" && "Asks to run outside the sandbox (sandbox escalation)",
    sandbox && sandbox !== "require_escalated" && sandbox !== "use_default" && `Sandbox permissions: ${sandbox}`,
    files?.read?.length && `Asks to read: ${files.read.join(", ")}`,
    files?.write?.length && `Asks to write: ${files.write.join(", ")}`,
    extra?.network?.enabled && "Asks for network access",
    justification?.trim() && `Codex's justification: ${justification.trim()}`,
  ].filter((line): line is string => typeof line === "string");
}

/**
 * `hookSpecificOutput.decision`: `allow`, or `deny` with the message Codex shows; a human's
 * "Deny and stop the turn" adds `interrupt: true`.
 */
export function codexOutput(decision: HookDecision): Record<string, unknown> {
  const stop = decision.chosen === DENY_STOP_OPTION.optionId;
  const verdict = decision.allow
    ? { behavior: "allow" }
    : { behavior: "deny", message: decision.reason, ...(stop && { interrupt: true }) };
  return { hookSpecificOutput: { hookEventName: "PermissionRequest", decision: verdict } };
}
