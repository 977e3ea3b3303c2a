/**
 * The agent wire contract (docs/agent-protocol.md), defined once.
 * The Worker validates frames with these schemas, the SDK builds frames from them,
 * and the tests import them. Environment-neutral: no Node and no Workers APIs here.
 */
import { z } from "zod";

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

const metaSchema = z.record(z.string(), z.unknown()).nullish();

export const permissionOptionKindSchema = z.enum(["allow_once", "allow_always", "reject_once", "reject_always"]);
export type PermissionOptionKind = z.infer<typeof permissionOptionKindSchema>;

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

export const helloParamsSchema = z.object({
  title: z.string().max(256).optional(),
  agent: z.object({ name: z.string().min(1).max(128), version: z.string().max(64).optional() }).optional(),
  host: z.string().max(256).optional(),
  cwd: z.string().max(4096).optional(),
});
export type HelloParams = z.infer<typeof helloParamsSchema>;

export const cancelRequestParamsSchema = z.object({ requestId: rpcIdSchema });
export const sessionCancelParamsSchema = z.looseObject({ sessionId: sessionIdSchema });

/**
 * How an agent asks for a shorter lifetime than its team's: `params._meta.tapgate.timeoutMs`.
 * The gate uses the smaller of this and the team lifetime.
 */
export const tapgateMetaSchema = z.object({
  timeoutMs: z
    .number()
    .int()
    .min(1000)
    .max(24 * 60 * 60 * 1000)
    .optional(),
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

// ── Elicitation (ACP `elicitation/create`, `elicitation/complete`) ─────────────────────────

/** The modes Tapgate renders: what `tapgate acp` advertises as `clientCapabilities.elicitation`. */
export const ELICITATION_CAPABILITIES: { form: Record<string, never>; url: Record<string, never> } = {
  form: {},
  url: {},
};

const fieldText = {
  title: z.string().max(256).nullish(),
  description: z.string().max(2048).nullish(),
  _meta: metaSchema,
};
const lengthBound = z.number().int().min(0).max(65_536).nullish();

/** A titled choice of a single-select enum (`oneOf`). */
export const elicitationEnumOptionSchema = z.looseObject({
  const: z.string().max(256),
  title: z.string().max(256),
  description: z.string().max(2048).nullish(),
});

/**
 * A string field; with `enum` or `oneOf`, a single-select choice. `pattern` is accepted and shown
 * as the agent's hint, never enforced: a regular expression from an agent run in the Worker could
 * backtrack for seconds (the agent checks its own pattern).
 */
export const elicitationStringSchema = z.looseObject({
  type: z.literal("string"),
  ...fieldText,
  minLength: lengthBound,
  maxLength: lengthBound,
  pattern: z.string().max(512).nullish(),
  format: z.enum(["email", "uri", "date", "date-time"]).nullish(),
  default: z.string().max(4096).nullish(),
  enum: z.array(z.string().max(256)).min(1).max(64).nullish(),
  oneOf: z.array(elicitationEnumOptionSchema).min(1).max(64).nullish(),
});
export const elicitationNumberSchema = z.looseObject({
  type: z.enum(["number", "integer"]),
  ...fieldText,
  minimum: z.number().nullish(),
  maximum: z.number().nullish(),
  default: z.number().nullish(),
});
export const elicitationBooleanSchema = z.looseObject({
  type: z.literal("boolean"),
  ...fieldText,
  default: z.boolean().nullish(),
});
/** One field: strings (and enums), numbers, integers, booleans. Nested objects and arrays are refused. */
export const elicitationPropertySchema = z.discriminatedUnion("type", [
  elicitationStringSchema,
  elicitationNumberSchema,
  elicitationBooleanSchema,
]);
export type ElicitationProperty = z.infer<typeof elicitationPropertySchema>;

/** ACP's restricted JSON Schema: a flat object of at most 32 fields; `required` names only its fields. */
export const elicitationSchemaSchema = z
  .looseObject({
    type: z.literal("object").default("object"),
    title: z.string().max(256).nullish(),
    description: z.string().max(2048).nullish(),
    properties: z
      .record(z.string().min(1).max(128), elicitationPropertySchema)
      .refine((p) => Object.keys(p).length <= 32, "at most 32 properties"),
    required: z.array(z.string()).nullish(),
  })
  .refine((s) => (s.required ?? []).every((k) => Object.hasOwn(s.properties, k)), {
    message: "required names a property that is not in properties",
    path: ["required"],
  });
export type ElicitationSchema = z.infer<typeof elicitationSchemaSchema>;

/**
 * A URL a human may be sent to: absolute `https:` only, and no user name or password in it (which
 * could dress `https://github.com@evil.example` up as a trusted host). Never fetched by Tapgate.
 */
export const elicitationUrlSchema = z
  .string()
  .max(4096)
  .refine((u) => {
    try {
      const url = new URL(u);
      return url.protocol === "https:" && url.username === "" && url.password === "" && url.hostname !== "";
    } catch {
      return false;
    }
  }, "url must be an absolute https:// URL without a user name or password");

/** Session scope (optionally one tool call's). ACP's request scope has no session to route to, so it is refused. */
const elicitationScope = {
  sessionId: sessionIdSchema,
  toolCallId: z.string().min(1).max(256).nullish(),
  message: z.string().min(1).max(4096),
  _meta: metaSchema,
};

/** `elicitation/create` params: form mode (a `requestedSchema`) or URL mode (`url`, `elicitationId`). */
export const createElicitationParamsSchema = z.discriminatedUnion("mode", [
  z.looseObject({ ...elicitationScope, mode: z.literal("form"), requestedSchema: elicitationSchemaSchema }),
  z.looseObject({
    ...elicitationScope,
    mode: z.literal("url"),
    url: elicitationUrlSchema,
    elicitationId: z.string().min(1).max(256),
  }),
]);
export type CreateElicitationParams = z.infer<typeof createElicitationParamsSchema>;

/** What an accepted form answers: one value per field (multi-select arrays are not rendered, so never sent). */
export const elicitationContentSchema = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]));
export type ElicitationContent = z.infer<typeof elicitationContentSchema>;

export const elicitationActionSchema = z.enum(["accept", "decline", "cancel"]);
export type ElicitationAction = z.infer<typeof elicitationActionSchema>;

/** The `elicitation/create` result. `content` only with `accept` of a form. */
export const createElicitationResponseSchema = z.looseObject({
  action: elicitationActionSchema,
  content: elicitationContentSchema.nullish(),
  _meta: metaSchema,
});
export type CreateElicitationResponse = z.infer<typeof createElicitationResponseSchema>;

/** `elicitation/complete` (a notification): the URL-mode interaction `elicitationId` is over. */
export const completeElicitationParamsSchema = z.looseObject({
  elicitationId: z.string().min(1).max(256),
  _meta: metaSchema,
});

/**
 * The fail-closed answer to an elicitation: every end that is not a human's answer (expiry, a lost
 * agent, revocation, restart, the agent's own cancel, any local failure) is `cancel`, never an
 * `accept` and never content nobody typed.
 */
export const ELICITATION_CANCELLED: CreateElicitationResponse = { action: "cancel" };

/** What an agent asks: a permission or an elicitation (told apart by `mode`, which only the latter has). */
export type AgentAsk = RequestPermissionParams | CreateElicitationParams;
export type AgentAnswer = RequestPermissionResponse | CreateElicitationResponse;

export function isElicitation(params: AgentAsk): params is CreateElicitationParams {
  return "mode" in params && (params.mode === "form" || params.mode === "url");
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
  escalatedTo: z.object({ names: z.array(z.string()), via: z.enum(["push", "email"]), at: z.number() }).optional(),
  claimedBy: z.object({ name: z.string(), at: z.number() }).optional(),
  unreachable: z.literal(true).optional(),
});
export type Progress = z.infer<typeof progressParamsSchema>;
