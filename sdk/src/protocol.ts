/**
 * The agent wire contract (docs/agent-protocol.md), defined once.
 * The Worker validates frames with these schemas, the SDK builds frames from them,
 * and the tests import them. Environment-neutral: no Node and no Workers APIs here.
 */
import { z } from "zod";
import { escalationViaSchema } from "./human/channels.js";
import { sealedRequestSchema } from "./private/sealed.js";

export const LIMITS = {
  frameBytes: 256 * 1024,
  jsonDepth: 64,
  pendingPerSession: 32,
  options: 8,
  rpcIdChars: 128,
} as const;

/** The SDK pings this often; the gate closes a socket that stays silent for two intervals. */
export const HEARTBEAT_INTERVAL_MS = 15_000;

export const METHODS = {
  hello: "_tapgate/hello",
  sessionUpdate: "session/update",
  requestPermission: "session/request_permission",
  cancelRequest: "$/cancel_request",
  sessionCancel: "session/cancel",
  /** Gate → agent notification: where a held request stands (who it reached, who saw it). */
  progress: "_tapgate/progress",
  elicitationCreate: "elicitation/create",
  elicitationComplete: "elicitation/complete",
} as const;

export const RPC_ERROR = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  /**
   * Server-defined: refused for a limit. The session already holds `LIMITS.pendingPerSession`
   * requests, or (with `data: {reason: "quota", limit, retryAfterMs}`) the request is over one
   * of the team's quotas (`GET /v1/policy` `limits`).
   */
  tooManyPending: -32001,
} as const;

export const sessionIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9._:-]{1,128}$/, "sessionId must be 1-128 characters of [A-Za-z0-9._:-]");

/** JSON-RPC ids: strings up to 128 characters or safe integers, echoed exactly. */
export const rpcIdSchema = z.union([
  z.string().max(LIMITS.rpcIdChars),
  z.number().refine(Number.isSafeInteger, "numeric ids must be safe integers"),
]);
export type RpcId = z.infer<typeof rpcIdSchema>;

export const metaSchema = z.record(z.string(), z.unknown()).nullish();

export const permissionOptionKindSchema = z.enum(["allow_once", "allow_always", "reject_once", "reject_always"]);
export type PermissionOptionKind = z.infer<typeof permissionOptionKindSchema>;

/** Whether an option of this kind allows the tool call (`allow_once`, `allow_always`). */
export const isAllowKind = (kind: string): boolean => kind.startsWith("allow");

/**
 * ACP v2 reserves `_`-prefixed values for implementation-specific kinds: kept as sent, shown as
 * the agent's own option, never counted as an allow by Tapgate. Other unknown kinds are refused.
 */
export const extensionKindSchema = z
  .string()
  .regex(/^_[\x21-\x7e]{1,63}$/, "custom option kinds start with _ (ACP extensibility), at most 64 characters");

export const permissionOptionSchema = z.looseObject({
  optionId: z.string().min(1).max(128),
  name: z.string().max(512),
  kind: z.union([permissionOptionKindSchema, extensionKindSchema]),
  _meta: metaSchema,
});
export type PermissionOption = z.infer<typeof permissionOptionSchema>;

export const toolKindSchema = z.enum([
  "read",
  "edit",
  "delete",
  "move",
  "search",
  "execute",
  "think",
  "fetch",
  "switch_mode",
  "other",
]);

/** ACP `ToolCallUpdate`: every field but the id may be absent; unknown fields pass through. */
export const toolCallUpdateSchema = z.looseObject({
  toolCallId: z.string().min(1).max(256),
  title: z.string().max(2048).nullish(),
  kind: toolKindSchema.nullish(),
  status: z.enum(["pending", "in_progress", "completed", "failed"]).nullish(),
  content: z.array(z.looseObject({ type: z.string() })).nullish(),
  locations: z
    .array(z.looseObject({ path: z.string().max(4096), line: z.number().int().nonnegative().nullish() }))
    .nullish(),
  rawInput: z.unknown().optional(),
  rawOutput: z.unknown().optional(),
  _meta: metaSchema,
});
export type ToolCallUpdate = z.infer<typeof toolCallUpdateSchema>;

/** ACP v1: the request is about `toolCall`. */
const v1PermissionParamsSchema = z.looseObject({
  sessionId: sessionIdSchema,
  toolCall: toolCallUpdateSchema,
  options: z.array(permissionOptionSchema).min(1).max(LIMITS.options),
  _meta: metaSchema,
});

const absolutePathSchema = z
  .string()
  .max(4096)
  .regex(/^(\/|[A-Za-z]:[\\/])/, "must be an absolute path");

/** ACP v2 draft `subject`: a tool call, a command, or a type Tapgate does not know (kept as sent). */
export const permissionSubjectSchema = z.union([
  z.looseObject({ type: z.literal("tool_call"), toolCall: toolCallUpdateSchema, _meta: metaSchema }),
  z.looseObject({
    type: z.literal("command"),
    command: z.string().max(65_536),
    cwd: absolutePathSchema,
    toolCallId: z.string().min(1).max(256).nullish(),
    terminalId: z.string().min(1).max(256).nullish(),
    _meta: metaSchema,
  }),
  z.looseObject({
    type: z
      .string()
      .min(1)
      .max(128)
      .refine((t) => t !== "tool_call" && t !== "command", "a known subject type with invalid fields"),
  }),
]);
export type PermissionSubject = z.infer<typeof permissionSubjectSchema>;

/** ACP v2 draft (`docs/rfds/v2/permission-requests.mdx`): a required `title`, optional `description` and `subject`. */
const v2PermissionParamsSchema = z.looseObject({
  sessionId: sessionIdSchema,
  title: z.string().min(1).max(2048),
  description: z.string().max(8192).nullish(),
  subject: permissionSubjectSchema.nullish(),
  options: z.array(permissionOptionSchema).min(1).max(LIMITS.options),
  _meta: metaSchema,
});
export type RequestPermissionParamsV2 = z.infer<typeof v2PermissionParamsSchema>;

/**
 * What a card shows of a v2 request, as the tool call v1 would have sent: the prompt's `title`,
 * its `description` as a text block, and the subject's tool call or command. The v2 fields
 * themselves stay on the params, as sent.
 */
export function cardToolCallOf(p: RequestPermissionParamsV2): ToolCallUpdate {
  const subject = p.subject;
  const said = p.description ? [{ type: "content", content: { type: "text", text: p.description } }] : [];
  if (subject?.type === "tool_call" && "toolCall" in subject) {
    const tc = subject.toolCall as ToolCallUpdate;
    return { ...tc, title: p.title, content: [...said, ...(tc.content ?? [])] };
  }
  if (subject?.type === "command" && "command" in subject) {
    const { command, cwd, toolCallId } = subject as { command: string; cwd: string; toolCallId?: string | null };
    const rawInput = { command, cwd };
    return { toolCallId: toolCallId ?? "command", title: p.title, kind: "execute", content: said, rawInput };
  }
  return { toolCallId: "permission", title: p.title, kind: "other", content: said };
}

const v2CardSchema = v2PermissionParamsSchema.transform((p) => ({ ...p, toolCall: cardToolCallOf(p) }));

/** v2 is a request with a `title` and no `toolCall`; anything else is read (and refused) as v1, naming its fields. */
const isV2 = (v: unknown) => typeof v === "object" && v !== null && !("toolCall" in v) && "title" in v;

/**
 * `session/request_permission` params, v1 and v2 side by side: a v2 request is read with the
 * card's tool call derived from it (`cardToolCallOf`), its own fields untouched.
 */
export const requestPermissionParamsSchema = z
  .unknown()
  .transform((value, ctx): z.output<typeof v1PermissionParamsSchema> | z.output<typeof v2CardSchema> => {
    const parsed = (isV2(value) ? v2CardSchema : v1PermissionParamsSchema).safeParse(value);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) ctx.issues.push({ ...issue, input: undefined });
      return z.NEVER;
    }
    const { options } = parsed.data;
    if (new Set(options.map((o) => o.optionId)).size !== options.length) {
      ctx.issues.push({ code: "custom", message: "optionId values must be unique", path: ["options"], input: options });
      return z.NEVER;
    }
    return parsed.data;
  });
export type RequestPermissionParams = z.infer<typeof requestPermissionParamsSchema>;
/** What an agent sends: v1 (`toolCall`) or v2 (`title`, `subject`). */
export type RequestPermissionRequest =
  | z.input<typeof v1PermissionParamsSchema>
  | z.input<typeof v2PermissionParamsSchema>;

export const requestPermissionResponseSchema = z.looseObject({
  outcome: z.discriminatedUnion("outcome", [
    z.object({ outcome: z.literal("cancelled") }),
    z.object({ outcome: z.literal("selected"), optionId: z.string() }),
  ]),
  _meta: metaSchema,
});
export type RequestPermissionResponse = z.infer<typeof requestPermissionResponseSchema>;

/**
 * What Tapgate adds to its answers in `_meta.tapgate` (ACP allows `_meta` on results; `outcome`
 * alone is the decision): the approval, why it ended, and for a human's decision who made it
 * and where. Answers the SDK gives itself (a lost connection, a local timeout) have none.
 */
export const tapgateAnswerMetaSchema = z.looseObject({
  approvalId: z.string(),
  /** A `ResolutionReason`: `decided`, `expired`, `agent_disconnected`, … */
  reason: z.string().nullable(),
  decidedBy: z.looseObject({ name: z.string(), device: z.string() }).optional(),
  /** The decider's words to the agent (the decision's `reason`), when they gave one. */
  message: z.string().optional(),
  /**
   * An allow after a human edited the tool's input (requests that said `acceptsEdits`): the
   * whole input to run instead of the one asked for. Absent: run it as asked.
   */
  updatedInput: z.record(z.string(), z.unknown()).optional(),
});
export type TapgateAnswerMeta = z.infer<typeof tapgateAnswerMetaSchema>;

/** The `_meta.tapgate` of an answer, when the service sent a well-formed one. */
export function tapgateAnswerMeta(answer: {
  _meta?: Record<string, unknown> | null | undefined;
}): TapgateAnswerMeta | undefined {
  const parsed = tapgateAnswerMetaSchema.safeParse(answer._meta?.tapgate);
  return parsed.success ? parsed.data : undefined;
}

/** `session/update` params. Only `tool_call` and `tool_call_update` matter to Tapgate. */
export const sessionUpdateParamsSchema = z.looseObject({
  sessionId: sessionIdSchema,
  update: z.looseObject({ sessionUpdate: z.string() }),
});
export type SessionUpdateParams = z.infer<typeof sessionUpdateParamsSchema>;

/**
 * A subagent's session names its parent (ACP `subagent_update` on the parent session): the card
 * says "subagent *name* of *the parent's title*". The agent's own words, shown as such.
 */
export const sessionParentSchema = z.object({
  sessionId: sessionIdSchema,
  title: z.string().max(256).optional(),
  name: z.string().max(128).optional(),
  task: z.string().max(512).optional(),
});
export type SessionParent = z.infer<typeof sessionParentSchema>;

export const helloParamsSchema = z.object({
  title: z.string().max(256).optional(),
  agent: z.object({ name: z.string().min(1).max(128), version: z.string().max(64).optional() }).optional(),
  host: z.string().max(256).optional(),
  cwd: z.string().max(4096).optional(),
  parent: sessionParentSchema.optional(),
});
export type HelloParams = z.infer<typeof helloParamsSchema>;

export const cancelRequestParamsSchema = z.object({ requestId: rpcIdSchema });
export const sessionCancelParamsSchema = z.looseObject({ sessionId: sessionIdSchema });

/**
 * What an agent tells Tapgate on a request, in `params._meta.tapgate`: `timeoutMs`, a shorter
 * lifetime than its team's (the gate uses the smaller); `acceptsEdits`, that it runs the tool
 * with the input an allow's `_meta.tapgate.updatedInput` carries (docs/agent-protocol.md "Edited
 * input"): only then may a decider edit before allowing. `sealed`: a private request's content,
 * sealed to the team's devices (docs/agent-protocol.md "Private requests"); the rest of the
 * request then carries no content.
 */
export const tapgateMetaSchema = z.object({
  timeoutMs: z
    .number()
    .int()
    .min(1000)
    .max(24 * 60 * 60 * 1000)
    .optional(),
  acceptsEdits: z.boolean().optional(),
  sealed: sealedRequestSchema.optional(),
});

/** The ACP answer for a withdrawn request. */
export const CANCELLED_ANSWER: RequestPermissionResponse = { outcome: { outcome: "cancelled" } };

/**
 * The answer given without a human decision (expiry, revocation, shutdown, any error):
 * the first `reject_once` option if one was offered, otherwise `cancelled`.
 * Never an allow, never `reject_always` (a refusal must not widen into a standing rule).
 *
 * @example
 * failClosedAnswer([{ optionId: "ok", name: "Allow", kind: "allow_once" },
 *                   { optionId: "no", name: "Deny", kind: "reject_once" }])
 * // → { outcome: { outcome: "selected", optionId: "no" } }
 */
export function failClosedAnswer(
  options: ReadonlyArray<{ optionId: string; kind: string }> | undefined,
): RequestPermissionResponse {
  const reject = options?.find((o) => o.kind === "reject_once");
  return reject
    ? { outcome: { outcome: "selected", optionId: reject.optionId } }
    : { outcome: { outcome: "cancelled" } };
}

export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

/** `undefined` for text that is not JSON (JSON itself cannot encode `undefined`). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * `_tapgate/progress` (gate → agent notification, and `progress` in a long poll's `202`): where a
 * held request stands, sent each time it changes. `deliveredTo`: devices the push service took it
 * for (`shownAt` once the device showed it) and open app pages it was shown on (`device: "app"`);
 * `seenBy`: people who saw it; `escalatedTo`: the latest escalation step past the first;
 * `unreachable`: nothing reached anyone yet (no device, no open page), the ladder moves on at once.
 */
export const progressParamsSchema = z.object({
  requestId: rpcIdSchema,
  approvalId: z.string(),
  deliveredTo: z.array(
    z.object({ name: z.string(), device: z.string(), at: z.number(), shownAt: z.number().optional() }),
  ),
  seenBy: z.array(z.object({ name: z.string(), at: z.number() })),
  escalatedTo: z.object({ names: z.array(z.string()), via: escalationViaSchema, at: z.number() }).optional(),
  claimedBy: z.object({ name: z.string(), at: z.number() }).optional(),
  unreachable: z.literal(true).optional(),
});
export type Progress = z.infer<typeof progressParamsSchema>;
