/**
 * Claude Code's `Elicitation` hook ↔ ACP: an MCP server asking the user something becomes the ACP
 * `elicitation/create` params Tapgate relays, and the human's answer becomes the hook's JSON.
 * Pure; the asking is `cli/claude-elicitation.ts`.
 *
 * Hook contract (code.claude.com/docs/en/hooks, "Elicitation"): stdin carries `session_id`,
 * `transcript_path`, `cwd`, `permission_mode`, `hook_event_name: "Elicitation"`,
 * `mcp_server_name`, `message`, and `mode` (`form`, the default, with `requested_schema`; or `url`
 * with `url` and `elicitation_id`). The answer on stdout (exit 0) is
 * `{hookSpecificOutput: {hookEventName: "Elicitation", action, content?}}`.
 */
import { z } from "zod";
import type { CreateElicitationParams, CreateElicitationResponse } from "../elicitation-protocol.js";

export const elicitationHookInputSchema = z.looseObject({
  session_id: z.string().min(1),
  transcript_path: z.string().optional(),
  cwd: z.string().optional(),
  permission_mode: z.string().optional(),
  hook_event_name: z.literal("Elicitation"),
  mcp_server_name: z.string().min(1),
  message: z.string(),
  mode: z.enum(["form", "url"]).optional(),
  requested_schema: z.unknown().optional(),
  url: z.string().optional(),
  elicitation_id: z.string().optional(),
});
export type ElicitationHookInput = z.infer<typeof elicitationHookInputSchema>;

export function isElicitationHookInput(input: unknown): boolean {
  return (
    typeof input === "object" && input !== null && (input as Record<string, unknown>).hook_event_name === "Elicitation"
  );
}

/**
 * The ACP params for the question, in the Tapgate session of the Claude Code session. The MCP
 * server's name goes in `_meta` (the card shows it as the agent's own words); the gate checks
 * the rest (a schema Tapgate does not render, a URL that is not https, …) and refuses it.
 */
export function toElicitationParams(input: ElicitationHookInput, sessionId: string): CreateElicitationParams {
  const common = {
    sessionId,
    message: input.message,
    _meta: { "claude-code": { mcpServerName: input.mcp_server_name } },
  };
  if (input.mode === "url") {
    return { ...common, mode: "url", url: input.url ?? "", elicitationId: input.elicitation_id ?? "" };
  }
  return { ...common, mode: "form", requestedSchema: input.requested_schema as never };
}

/** The hook's JSON answer: the action, and an accepted form's content. */
export function elicitationHookOutput(answer: Pick<CreateElicitationResponse, "action" | "content">) {
  return {
    hookSpecificOutput: {
      hookEventName: "Elicitation",
      action: answer.action,
      ...(answer.action === "accept" && answer.content ? { content: answer.content } : {}),
    },
  };
}
