/**
 * Private requests in the SessionGate (docs/agent-protocol.md "Private requests"): a sealed
 * request's content is ciphertext the gate cannot read, so it is held on what routing needs
 * (session, kind, the SDK's risk tier, option ids and kinds, `requestHash`, the envelope) and
 * nothing else. In a team whose policy says `privacy: "private"`, an unsealed request is refused
 * before anything of it is stored, and what `hello` and `session/update` tell of content (the
 * working directory, tool-call content) is not kept.
 *
 * Owns: those rules, pure. Does not own: the envelope (`sdk/src/private/envelope.ts`, which the
 * gate never opens), the check order (intake.ts) or rule matching by fingerprint (`sdk/src/rules.ts`).
 */
import type { Approval, ApprovalSnapshot, SessionInfo } from "../../sdk/src/approval";
import type { AgentAsk } from "../../sdk/src/elicitation-protocol";
import type { TeamPolicy } from "../../sdk/src/human/policy";
import {
  SEALED_ELICITATION_MESSAGE,
  SEALED_TOOL_CALL_ID,
  type SealedRequest,
  sealedOptionName,
} from "../../sdk/src/private/contract";
import type { PermissionOption } from "../../sdk/src/protocol";
import { limitsOf, offeredOptions } from "../policy";
import { openingQuorum } from "./risk";
import type { ServedSession } from "./store";

export const isPrivateTeam = (policy: Pick<TeamPolicy, "privacy"> | undefined): boolean =>
  policy?.privacy === "private";

/** The refusal of an unsealed request in a private team: `data.reason` on every way in. */
export const PRIVATE_REQUIRED = "private_required";
export const PRIVATE_REQUIRED_MESSAGE =
  "this team is in private mode: requests must be sealed to its devices by the tapgate SDK or CLI " +
  "(tapgate acp, tapgate run, tapgate mcp, tapgate claude-hook); nothing was held";

/** What a sealed request may carry besides the envelope: nothing that is content. */
const SEALED_TOOL_CALL_KEYS = new Set(["toolCallId", "kind"]);
const SEALED_TAPGATE_KEYS = new Set(["timeoutMs", "acceptsEdits", "sealed"]);
const SEALED_OPTION_KEYS = new Set(["optionId", "name", "kind"]);

/**
 * Why a sealed request is refused, or null: content outside the envelope (the SDK seals all of
 * it; anything else would be stored in clear), or a ciphertext over the team's
 * `storedBytesPerRequest` (a sealed request is never cut: nobody could read half of one).
 */
export function sealedRefusal(policy: TeamPolicy, params: AgentAsk, sealed: SealedRequest): string | null {
  const outside = contentOutside(params);
  if (outside) return `a sealed request carries its content only in _meta.tapgate.sealed: ${outside} is not allowed`;
  const bytes = base64urlBytes(sealed.ciphertext);
  const cap = limitsOf(policy).storedBytesPerRequest;
  return bytes > cap
    ? `the sealed request's ciphertext is ${bytes} bytes, over the team's storedBytesPerRequest (${cap})`
    : null;
}

function contentOutside(params: AgentAsk): string | null {
  const metaKeys = Object.keys(params._meta ?? {}).filter((k) => k !== "tapgate");
  if (metaKeys.length > 0) return `_meta.${metaKeys[0]}`;
  const tapgate = (params._meta?.tapgate ?? {}) as Record<string, unknown>;
  const extra = Object.keys(tapgate).find((k) => !SEALED_TAPGATE_KEYS.has(k));
  if (extra) return `_meta.tapgate.${extra}`;
  if ("mode" in params) {
    const e = params as {
      mode: string;
      message: string;
      toolCallId?: unknown;
      requestedSchema?: { properties?: object };
    };
    if (e.mode !== "form") return "mode (a sealed elicitation is sent as a form)";
    if (e.message !== SEALED_ELICITATION_MESSAGE) return "message (use SEALED_ELICITATION_MESSAGE)";
    if (Object.keys(e.requestedSchema?.properties ?? {}).length > 0) return "requestedSchema.properties";
    return null;
  }
  if ("title" in params && params.title !== undefined) return "title";
  const toolCallKey = Object.keys(params.toolCall).find((k) => !SEALED_TOOL_CALL_KEYS.has(k));
  if (toolCallKey) return `toolCall.${toolCallKey}`;
  const optionKey = params.options.flatMap(Object.keys).find((k) => !SEALED_OPTION_KEYS.has(k));
  return optionKey ? `options[].${optionKey}` : null;
}

/** What the session says of itself on a private request's card: no working directory, no parent's words. */
export function sealedSession(info: SessionInfo): SessionInfo {
  return { title: info.title, agent: info.agent, host: info.host, cwd: null };
}

/** What a sealed request's card holds in place of its content: the fixed tool call and the session. */
function sealedSnapshot(meta: ServedSession, kind: unknown): ApprovalSnapshot {
  const toolCall = { toolCallId: SEALED_TOOL_CALL_ID, ...(typeof kind === "string" && { kind }) };
  return { toolCall, session: sealedSession(meta.info) };
}

/**
 * A sealed permission request, held: its hash and tier are the SDK's (the gate cannot recompute
 * them: it never sees the plaintext), its options keep their ids and kinds under generic names,
 * and it takes no edits (nobody could check an edit against a request the service cannot read).
 */
export function newSealedApproval(a: {
  id: string;
  meta: ServedSession;
  params: { toolCall: { kind?: unknown }; options: PermissionOption[]; _meta?: unknown };
  sealed: SealedRequest;
  lifetimeMs: number;
  now: number;
}): Approval {
  const quorum = openingQuorum(a.meta.policy, a.sealed.risk);
  const options = offeredOptions(a.params.options, a.meta.policy, a.params._meta).map(({ optionId, kind }) => ({
    optionId,
    name: sealedOptionName(kind),
    kind,
  }));
  return {
    ...pendingShell(a),
    snapshot: sealedSnapshot(a.meta, a.params.toolCall.kind),
    options,
    risk: a.sealed.risk,
    ...(quorum && { quorum }),
  };
}

/** A sealed elicitation, held: the placeholder question (the real one is sealed), the SDK's hash. */
export function newSealedElicitation(a: {
  id: string;
  meta: ServedSession;
  sealed: SealedRequest;
  lifetimeMs: number;
  now: number;
}): Approval {
  const snapshot: ApprovalSnapshot = {
    ...sealedSnapshot(a.meta, undefined),
    elicitation: {
      mode: "form",
      message: SEALED_ELICITATION_MESSAGE,
      requestedSchema: { type: "object", properties: {} },
    },
  };
  return { ...pendingShell(a), type: "elicitation", snapshot, options: [], action: null };
}

function pendingShell(a: { id: string; meta: ServedSession; sealed: SealedRequest; lifetimeMs: number; now: number }) {
  return {
    id: a.id,
    sessionId: a.meta.sessionId,
    state: "pending" as const,
    reason: null,
    requestHash: a.sealed.requestHash,
    createdAt: a.now,
    expiresAt: a.now + a.lifetimeMs,
    resolvedAt: null,
    optionId: null,
    decidedBy: null,
    sealed: a.sealed,
  };
}

/** The decoded size of base64url text without padding. */
function base64urlBytes(text: string): number {
  return Math.floor((text.length * 3) / 4);
}
