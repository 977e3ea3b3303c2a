/**
 * Tapgate's two MCP tools, the same over stdio (`tapgate mcp`) and over Streamable HTTP (the
 * Worker's `POST /v1/mcp`):
 *
 * - `approve`, in the shape Claude Code's `--permission-prompt-tool` calls: `{tool_name, input,
 *   tool_use_id?}` in; one text block holding `{"behavior":"allow","updatedInput":{…}}` or
 *   `{"behavior":"deny","message":"…"}` out. The card is the Claude hook's (`claude/hook.ts`).
 * - `request_approval`, for any MCP agent: `{title, kind?, command?, details?, options?}` in;
 *   `{approved, optionId, reason?, decidedBy?}` out, as structured content and as text.
 *
 * Every failure — bad input, no key, an unreachable server, a refusal, expiry — is a deny
 * (`approved: false`) with the reason, never an MCP error a client might read as "go ahead":
 * arguments are validated here, not by the MCP SDK (which would answer a tool error), and the
 * handlers never throw.
 *
 * Owns: the tools' schemas, the requests they make, their answers. Does not own: asking (the
 * caller's `ask`: the SDK's socket over stdio, the gate's HTTP hold in the Worker) or transports.
 * Environment-neutral: the Worker imports it.
 */
import type { CallToolResult, McpServer, StandardSchemaWithJSON } from "@modelcontextprotocol/server";
import { z } from "zod";
import { type HookInput, type ReadExisting, toolCallIdOf, toPermissionRequest } from "../claude/hook.js";
import { type Asked, decisionOf, denyReason, HOOK_OPTIONS } from "../hooks/decision.js";
import {
  LIMITS,
  permissionOptionSchema,
  type RequestPermissionParams,
  tapgateAnswerMeta,
  toolKindSchema,
} from "../protocol.js";

export const approveInputSchema = z.looseObject({
  tool_name: z.string().min(1).max(256).describe("the tool Claude Code wants to run"),
  input: z.record(z.string(), z.unknown()).describe("the tool's arguments"),
  tool_use_id: z.string().min(1).max(256).optional(),
});

export const requestApprovalInputSchema = z.object({
  title: z.string().min(1).max(2048).describe("what the human is asked to allow, in one line"),
  kind: toolKindSchema.optional().describe("what kind of action it is"),
  command: z.string().max(65_536).optional().describe("the command line it would run, if any"),
  details: z.string().max(8192).optional().describe("anything else the human should read before deciding"),
  options: z
    .array(permissionOptionSchema)
    .min(1)
    .max(LIMITS.options)
    .optional()
    .describe("the choices offered (default: Allow once, Deny); an allow_* kind approves"),
});

export const requestApprovalOutputSchema = z.object({
  approved: z.boolean(),
  /** The option the human chose; null when nothing was chosen (a failure, expiry, cancellation). */
  optionId: z.string().nullable(),
  reason: z.string().optional(),
  decidedBy: z.object({ name: z.string(), device: z.string() }).optional(),
});
export type ApprovalResult = z.infer<typeof requestApprovalOutputSchema>;

/** Asks a human once; never throws (a failure is `{failed}`). `signal`: the MCP client gave up. */
export type Ask = (request: RequestPermissionParams, signal?: AbortSignal) => Promise<Asked>;

export interface ToolHost {
  /** The Tapgate session this MCP session asks in. */
  sessionId: string;
  ask: Ask;
  /** A file's current text for a `Write` diff (the Worker cannot read the agent's files). */
  readExisting: ReadExisting;
}

/**
 * Advertises `schema` in `tools/list` but lets every argument through to the handler, which
 * validates it itself and answers a deny: the MCP SDK's own check would answer a tool error.
 */
function advertised(schema: StandardSchemaWithJSON): StandardSchemaWithJSON<unknown, unknown> {
  const { vendor, jsonSchema } = schema["~standard"];
  return { "~standard": { version: 1, vendor, jsonSchema, validate: (value) => ({ value }) } };
}

/** The first problem of a failed parse, worded as the other entry points word it. */
function problemOf(error: z.ZodError): string {
  const issue = error.issues[0];
  const where = issue?.path.length ? `${issue.path.join(".")}: ` : "";
  return `Tapgate: invalid arguments (${where}${issue?.message})`;
}

const text = (value: unknown): CallToolResult["content"] => [{ type: "text", text: JSON.stringify(value) }];

/**
 * `approve`'s one text block: what Claude Code's permission prompt tool reads. Its requests take
 * edited input (`toPermissionRequest` says so), so an "Edit and allow" runs the edit.
 */
export function approveAnswer(asked: Asked, input: Record<string, unknown>): CallToolResult {
  const decision = decisionOf(asked, true);
  const verdict = decision.allow
    ? { behavior: "allow", updatedInput: decision.updatedInput ?? input }
    : { behavior: "deny", message: decision.reason };
  return { content: text(verdict) };
}

export async function approve(host: ToolHost, args: unknown, signal?: AbortSignal): Promise<CallToolResult> {
  const parsed = approveInputSchema.safeParse(args);
  if (!parsed.success) return approveAnswer({ failed: problemOf(parsed.error) }, {});
  const { tool_name, input, tool_use_id } = parsed.data;
  const hookInput: HookInput = {
    session_id: host.sessionId,
    hook_event_name: "PermissionRequest",
    tool_name,
    tool_input: input,
    ...(tool_use_id && { tool_use_id }),
  };
  const request = toPermissionRequest(hookInput, host.sessionId, toolCallIdOf(hookInput), host.readExisting);
  return approveAnswer(await host.ask(request, signal), input);
}

/** The request `request_approval` makes: the agent's title, a command as its argument, details as text. */
export function approvalRequest(
  sessionId: string,
  input: z.infer<typeof requestApprovalInputSchema>,
): RequestPermissionParams {
  const { title, kind, command, details, options } = input;
  return {
    sessionId,
    toolCall: {
      toolCallId: `mcp-${crypto.randomUUID()}`,
      title,
      kind: kind ?? (command === undefined ? "other" : "execute"),
      status: "pending",
      ...(details && { content: [{ type: "content", content: { type: "text", text: details } }] }),
      ...(command !== undefined && { rawInput: { command } }),
    },
    options: options ?? [...HOOK_OPTIONS],
  };
}

const ALLOW_KINDS = new Set(["allow_once", "allow_always"]);

/** `request_approval`'s answer: approved only for an offered option of an allow kind. */
export function approvalResult(asked: Asked, offered: RequestPermissionParams["options"]): ApprovalResult {
  if ("failed" in asked) return { approved: false, optionId: null, reason: asked.failed };
  const { outcome } = asked.answer;
  const chosen = outcome.outcome === "selected" ? offered.find((o) => o.optionId === outcome.optionId) : undefined;
  const meta = tapgateAnswerMeta(asked.answer);
  const decidedBy = meta?.decidedBy && { name: meta.decidedBy.name, device: meta.decidedBy.device };
  const said = meta?.message?.trim();
  if (chosen && ALLOW_KINDS.has(chosen.kind)) {
    return {
      approved: true,
      optionId: chosen.optionId,
      ...(said && { reason: said }),
      ...(decidedBy && { decidedBy }),
    };
  }
  const reason = meta ? denyReason(meta, asked.waitedMs) : decisionOf(asked).reason;
  return { approved: false, optionId: chosen?.optionId ?? null, reason, ...(decidedBy && { decidedBy }) };
}

export async function requestApproval(host: ToolHost, args: unknown, signal?: AbortSignal): Promise<CallToolResult> {
  const parsed = requestApprovalInputSchema.safeParse(args);
  if (!parsed.success) return approvalAnswer(approvalResult({ failed: problemOf(parsed.error) }, []));
  const request = approvalRequest(host.sessionId, parsed.data);
  return approvalAnswer(approvalResult(await host.ask(request, signal), request.options));
}

const approvalAnswer = (result: ApprovalResult): CallToolResult => ({
  content: text(result),
  structuredContent: result,
});

/** Registers both tools on `server`, asking through `host`. */
export function registerTapgateTools(server: McpServer, host: ToolHost): void {
  server.registerTool(
    "approve",
    {
      title: "Ask a human on Tapgate (Claude Code permission prompt)",
      description:
        "Claude Code's --permission-prompt-tool: asks a human on their phone whether the tool may run. " +
        'Answers {"behavior":"allow","updatedInput":…} or {"behavior":"deny","message":…}.',
      inputSchema: advertised(approveInputSchema),
    },
    (args, ctx) => approve(host, args, ctx.mcpReq.signal),
  );
  server.registerTool(
    "request_approval",
    {
      title: "Ask a human on Tapgate",
      description:
        "Asks a human (on their phone, via Tapgate) before you act, and waits for the decision. " +
        "Act only when the result says approved: true; otherwise do not act, and tell the user the reason.",
      inputSchema: advertised(requestApprovalInputSchema),
      outputSchema: requestApprovalOutputSchema,
    },
    (args, ctx) => requestApproval(host, args, ctx.mcpReq.signal),
  );
}
