/**
 * A private request as the agent side sends it (docs/agent-protocol.md "Private requests"): the
 * plaintext the card shows, built as the gate would build its snapshot (`worker/gate/rules.ts`
 * `newApproval`, `worker/gate/elicitation.ts`: the tool call over what `session/update` said of
 * it, the session, `_meta` without `tapgate`, a v2 request's own fields, an elicitation's
 * question), its risk tier from the team's high-risk patterns, its rule fingerprint, sealed to
 * the given devices; and the params the service receives instead, which carry none of it.
 *
 * Owns: plaintext and sealed params. Does not own: which devices (`recipients.ts`), the envelope
 * (`envelope.ts`), the fingerprint's algorithm (`fingerprint.ts`). Environment-neutral.
 */
import type { SessionInfo } from "../approval.js";
import { type CreateElicitationParams, createElicitationParamsSchema } from "../elicitation-protocol.js";
import { highRiskPatternSchema } from "../human/policy.js";
import { isRecord } from "../jsonrpc.js";
import { describeIssues } from "../params.js";
import { type RequestPermissionRequest, requestPermissionParamsSchema, type SessionParent } from "../protocol.js";
import { requestFacts } from "../request-match.js";
import { v2Fields, withoutNullish } from "../request-snapshot.js";
import { isHighRisk } from "../risk-match.js";
import {
  type Risk,
  SEALED_ELICITATION_MESSAGE,
  SEALED_TOOL_CALL_ID,
  type SealedPlaintext,
  type SealedRequest,
  sealedOptionName,
} from "./contract.js";
import { sealRequest } from "./envelope.js";
import { ruleFingerprint } from "./fingerprint.js";

/** What the SDK knows of its session: what the hello would have said (in private mode it says less). */
export interface SealingSession {
  title?: string | null;
  agent?: { name: string; version?: string } | null;
  host?: string | null;
  cwd?: string | null;
  parent?: SessionParent;
}

export interface SealingContext {
  /** The trusted devices to seal to (`trustRecipients`). */
  recipients: ReadonlyArray<{ deviceId: string; publicKey: string }>;
  /** The team's high-risk patterns, as `GET /v1/agent/recipients` gave them. */
  highRisk: readonly unknown[];
  /** The team's rule key: without one the request carries no fingerprint, and no rule can be made from it. */
  ruleKey?: string;
  session: SealingSession;
  /** What this session's `session/update`s said about the request's tool call (merged by id). */
  knownToolCall?: Record<string, unknown>;
}

/** The `_meta.tapgate` a sealed request carries: the sealed request, and a shorter lifetime if asked. */
type SealedMeta = { tapgate: { sealed: SealedRequest; timeoutMs?: number } };

export type SealedPermissionParams = {
  sessionId: string;
  toolCall: { toolCallId: string; kind?: string };
  options: Array<{ optionId: string; name: string; kind: string }>;
  _meta: SealedMeta;
};

/**
 * Seals a `session/request_permission` (v1 or v2): the params the service receives in place of
 * `params`. Throws a `TypeError` naming the invalid fields (never their values) if `params` is
 * not a valid request.
 */
export async function sealPermissionRequest(
  params: RequestPermissionRequest,
  context: SealingContext,
): Promise<SealedPermissionParams> {
  const parsed = requestPermissionParamsSchema.safeParse(params);
  if (!parsed.success) throw new TypeError(`invalid params (${describeIssues(parsed.error)})`);
  const request = parsed.data;
  const snapshot = {
    toolCall: {
      ...context.knownToolCall,
      ...withoutNullish(request.toolCall),
      toolCallId: request.toolCall.toolCallId,
    },
    session: sessionInfoOf(context.session),
    ...agentMeta(request._meta),
    ...v2Fields(request),
  };
  const facts = requestFacts(snapshot);
  const fingerprint =
    context.ruleKey === undefined
      ? undefined
      : ruleFingerprint(context.ruleKey, {
          kind: facts.kind ?? "other",
          command: facts.command ?? facts.title ?? "",
          cwd: facts.cwd,
          host: facts.host,
        });
  const plaintext: SealedPlaintext = {
    v: 1,
    snapshot,
    options: request.options.map(({ optionId, name, kind }) => ({ optionId, name, kind })),
    ...(fingerprint && { fingerprint }),
  };
  const sealed = await sealRequest({ plaintext, risk: riskOf(context.highRisk, snapshot), to: context.recipients });
  const kind = typeof request.toolCall.kind === "string" ? request.toolCall.kind : undefined;
  return {
    sessionId: request.sessionId,
    toolCall: { toolCallId: SEALED_TOOL_CALL_ID, ...(kind && { kind }) },
    options: request.options.map(({ optionId, kind }) => ({ optionId, name: sealedOptionName(kind), kind })),
    _meta: sealedMeta(sealed, request._meta),
  };
}

export type SealedElicitationParams = {
  sessionId: string;
  mode: "form";
  message: typeof SEALED_ELICITATION_MESSAGE;
  requestedSchema: { type: "object"; properties: Record<string, never> };
  _meta: SealedMeta;
};

/**
 * Seals an `elicitation/create`: its question (mode, message, form schema, URL and its id) goes
 * only into the plaintext; the service gets a form with a fixed message and no fields, whatever
 * was asked (docs/agent-protocol.md "Private requests").
 */
export async function sealElicitation(
  params: CreateElicitationParams,
  context: SealingContext,
): Promise<SealedElicitationParams> {
  const parsed = createElicitationParamsSchema.safeParse(params);
  if (!parsed.success) throw new TypeError(`invalid params (${describeIssues(parsed.error)})`);
  const asked = parsed.data;
  const elicitation =
    asked.mode === "form"
      ? { mode: asked.mode, message: asked.message, requestedSchema: asked.requestedSchema }
      : { mode: asked.mode, message: asked.message, url: asked.url, elicitationId: asked.elicitationId };
  const snapshot = {
    toolCall: { ...withoutNullish(context.knownToolCall ?? {}), toolCallId: asked.toolCallId ?? "" },
    session: sessionInfoOf(context.session),
    ...agentMeta(asked._meta),
    elicitation,
  };
  const plaintext: SealedPlaintext = { v: 1, snapshot, options: [] };
  // The gate gives elicitations no tier; neither does the sealed one.
  const sealed = await sealRequest({ plaintext, risk: "normal", to: context.recipients });
  return {
    sessionId: asked.sessionId,
    mode: "form",
    message: SEALED_ELICITATION_MESSAGE,
    requestedSchema: { type: "object", properties: {} },
    _meta: sealedMeta(sealed, asked._meta),
  };
}

/**
 * The tier the gate would give: high when a pattern matches. A pattern this SDK cannot read makes
 * the request high too (the stricter tier, rather than one a pattern the team set was skipped for).
 */
export function riskOf(highRisk: readonly unknown[], snapshot: Parameters<typeof requestFacts>[0]): Risk {
  const patterns = highRisk.map((p) => highRiskPatternSchema.safeParse(p));
  if (patterns.some((p) => !p.success)) return "high";
  return isHighRisk(
    patterns.flatMap((p) => (p.success ? [p.data] : [])),
    requestFacts(snapshot),
  )
    ? "high"
    : "normal";
}

function sessionInfoOf(s: SealingSession): SessionInfo {
  return {
    title: s.title ?? null,
    agent: s.agent ?? null,
    host: s.host ?? null,
    cwd: s.cwd ?? null,
    ...(s.parent && { parent: s.parent }),
  };
}

/** The agent's `_meta`, without Tapgate's own key; absent when nothing else is left. */
function agentMeta(meta: Record<string, unknown> | null | undefined): { meta?: Record<string, unknown> } {
  if (!isRecord(meta)) return {};
  const { tapgate: _, ...rest } = meta;
  return Object.keys(rest).length > 0 ? { meta: rest } : {};
}

/** `_meta` of the sealed params: the sealed request, and the agent's `tapgate.timeoutMs` (nothing else). */
function sealedMeta(sealed: SealedRequest, meta: Record<string, unknown> | null | undefined): SealedMeta {
  const tapgate = isRecord(meta) && isRecord(meta.tapgate) ? meta.tapgate : {};
  const timeoutMs = typeof tapgate.timeoutMs === "number" ? tapgate.timeoutMs : undefined;
  return { tapgate: { sealed, ...(timeoutMs !== undefined && { timeoutMs }) } };
}
