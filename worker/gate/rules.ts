/**
 * The SessionGate's decision rules as pure functions: what a new approval looks like (snapshot,
 * hash, the options humans are offered, its lifetime), what the agent is answered (the
 * fail-closed answer when no human decided), whether a decision may be taken, when a pending
 * request lapses, which policy a join keeps, and the outbox's backoff.
 *
 * Owns: rules, no state, no I/O. Does not own: storage (store.ts) or the transitions that apply
 * the rules (state-machine.ts). Imports no `cloudflare:workers`, so rules.test.ts runs under Node.
 */
import type {
  Approval,
  ApprovalRule,
  ApprovalState,
  DecidedBy,
  OfferedOption,
  Quorum,
  ResolutionReason,
  SessionInfo,
} from "../../sdk/src/approval";
import type { ToolInput } from "../../sdk/src/edit-input";
import type { ElicitationAction, ElicitationContent } from "../../sdk/src/elicitation-protocol";
import { agentPromptOf } from "../../sdk/src/permission-prompt";
import {
  failClosedAnswer,
  type HelloParams,
  isAllowKind,
  type PermissionOption,
  type RequestPermissionParams,
  type RequestPermissionResponse,
} from "../../sdk/src/protocol";
import { v2Fields, withoutNullish } from "../../sdk/src/request-snapshot";
import { canonicalJson, sha256Hex } from "../crypto";
import type { OutboxOp } from "../db";
import { limitsOf, offeredOptions, requestLifetimeMs, type VersionedPolicy } from "../policy";
import { DECIDER_ROLES } from "../roles";
import type { DecisionInput, GateJoin } from "./api";
import { checkEdit, editedInputHash } from "./edit";
import { highRiskAllow, openingQuorum, riskOf } from "./risk";
import { sealedHashOf } from "./sealed";
import type { ServedSession } from "./store";
import { storedSnapshot } from "./stored-snapshot";

export { offeredOptions, requestLifetimeMs, withoutNullish };

/** An HTTP-held request not polled for this long is denied `agent_disconnected`. */
export const LEASE_MS = 60_000;

export const EMPTY_INFO: SessionInfo = { title: null, agent: null, host: null, cwd: null };

export const OUTBOX_RETRY_MS = 5_000;
/**
 * The outbox's alarm while no flush has failed: each change flushes at once, so the alarm is
 * only the safety net for an instance that dies before its flush lands. Far enough out that it
 * does not move the alarm on every decision (a storage write, and a wake for nothing).
 */
export const OUTBOX_SAFETY_NET_MS = 60_000;
export const OUTBOX_RETRY_MAX_MS = 5 * 60_000;
/**
 * Rows behind a row that failed alone, each tried alone too, before the failure counts as an
 * outage (D1 or the hub down: back off, set nothing aside) rather than that row's own fault
 * (set aside as a dead letter, once a row behind it landed).
 */
export const ALONE_PROBES = 2;
/** Dead letters are replayed after the next flush that lands; a replay that fails waits this long, doubling. */
export const DEAD_LETTER_REPLAY_MS = 60_000;
export const DEAD_LETTER_REPLAY_MAX_MS = 6 * 60 * 60_000;
/** A gate keeps at most this many dead letters (the oldest go first), each at most DEAD_LETTER_KEEP_MS. */
export const DEAD_LETTERS_KEPT = 1_000;
export const DEAD_LETTER_KEEP_MS = 30 * 24 * 60 * 60_000;

/** How long the outbox waits after a failed flush that followed `earlierFailures` failed ones in a row (0: the first). */
export function retryDelayMs(earlierFailures: number): number {
  return doubling(OUTBOX_RETRY_MS, OUTBOX_RETRY_MAX_MS, earlierFailures);
}

/** How long dead letters wait after their `earlierReplays`-th replay that left some behind (0: the first). */
export function replayDelayMs(earlierReplays: number): number {
  return doubling(DEAD_LETTER_REPLAY_MS, DEAD_LETTER_REPLAY_MAX_MS, earlierReplays);
}

function doubling(first: number, max: number, n: number): number {
  return Math.min(first * 2 ** Math.min(n, 16), max);
}

/** How a request leaves `pending`. */
export interface Resolution {
  state: Exclude<ApprovalState, "pending">;
  reason: ResolutionReason;
  optionId?: string;
  decidedBy?: DecidedBy;
  /** An elicitation's answer (elicitation.ts): the action, and an accepted form's content (for the agent only). */
  action?: ElicitationAction;
  content?: ElicitationContent;
  /** The standing rule that allowed it (reason `rule`). */
  rule?: ApprovalRule;
  /** The decider's words to the agent, when they gave some. */
  message?: string;
  /** A high-risk allow under a quorum: who allowed, the last one included. */
  quorum?: Quorum;
  /** An allow with edited input (edit.ts): the input the agent runs instead, and its hash. */
  editedInput?: ToolInput;
  editedInputHash?: string;
}

/**
 * A new pending approval: the snapshot humans see (the request over what `session/update` told
 * about its tool call), hashed, with the options the team's policy lets humans pick. The hash
 * covers the whole snapshot; what is stored of it is cut to the team's `storedBytesPerRequest`
 * (stored-snapshot.ts).
 */
export function newApproval(a: {
  id: string;
  meta: ServedSession;
  params: RequestPermissionParams;
  knownToolCall: Record<string, unknown>;
  lifetimeMs: number;
  now: number;
}): Approval {
  const { toolCall } = a.params;
  const snapshot = {
    toolCall: { ...a.knownToolCall, ...withoutNullish(toolCall), toolCallId: toolCall.toolCallId },
    session: a.meta.info,
    ...(a.params._meta ? { meta: a.params._meta } : {}),
    ...v2Fields(a.params),
  };
  const risk = riskOf(a.meta.policy, snapshot);
  const quorum = openingQuorum(a.meta.policy, risk);
  return {
    id: a.id,
    sessionId: a.meta.sessionId,
    state: "pending",
    reason: null,
    snapshot: storedSnapshot(snapshot, limitsOf(a.meta.policy).storedBytesPerRequest),
    options: offeredOptions(a.params.options, a.meta.policy, a.params._meta).map(offeredOption),
    requestHash: sha256Hex(canonicalJson(snapshot)),
    createdAt: a.now,
    expiresAt: a.now + a.lifetimeMs,
    resolvedAt: null,
    optionId: null,
    decidedBy: null,
    risk,
    ...(quorum && { quorum }),
  };
}

/** The approval after it left `pending`. */
export function resolvedApproval(pending: Approval, r: Resolution, now: number): Approval {
  return {
    ...pending,
    state: r.state,
    reason: r.reason,
    resolvedAt: now,
    optionId: r.optionId ?? null,
    decidedBy: r.decidedBy ?? null,
    ...(pending.type === "elicitation" && { action: r.action ?? null }),
    ...(r.rule && { rule: r.rule }),
    ...(r.message !== undefined && { message: r.message }),
    ...(r.quorum && { quorum: r.quorum }),
    ...(r.editedInput && { editedInput: r.editedInput, editedInputHash: r.editedInputHash }),
  };
}

/**
 * The ACP `outcome`, and in `_meta.tapgate` which approval it was, why it ended and who decided.
 * Anything but a human's choice or the agent's own cancel gets the fail-closed answer: the
 * agent's own `reject_once` option, else `cancelled`.
 */
export function agentAnswer(
  approvalId: string,
  agentOptions: PermissionOption[],
  r: {
    reason: ResolutionReason | null;
    optionId?: string | null;
    decidedBy?: DecidedBy | null;
    rule?: ApprovalRule | null;
    message?: string;
    editedInput?: ToolInput;
  },
): RequestPermissionResponse {
  const { outcome } =
    (r.reason === "decided" || (r.reason === "rule" && r.rule)) && r.optionId
      ? { outcome: { outcome: "selected" as const, optionId: r.optionId } }
      : r.reason === "agent_cancelled" || r.reason === "session_cancelled" || r.reason === "dismissed"
        ? { outcome: { outcome: "cancelled" as const } }
        : failClosedAnswer(agentOptions);
  const decidedBy = r.decidedBy ? { name: r.decidedBy.name, device: r.decidedBy.device } : undefined;
  const rule = r.reason === "rule" && r.rule ? { id: r.rule.id, createdBy: r.rule.createdBy } : undefined;
  const message = r.message !== undefined ? { message: r.message } : undefined;
  // Only a human's allow carries an edit (checkDecision); never a fail-closed answer.
  const edit = outcome.outcome === "selected" && r.reason === "decided" && r.editedInput;
  return {
    outcome,
    _meta: {
      tapgate: {
        approvalId,
        reason: r.reason,
        ...(decidedBy && { decidedBy }),
        ...(rule && { rule }),
        ...message,
        ...(edit && { updatedInput: edit }),
      },
    },
  };
}

/** An option as humans see it: its id, name and kind, and the adapter's `_meta.permission` words (permission-prompt.ts). */
function offeredOption({ optionId, name, kind, _meta }: PermissionOption): OfferedOption {
  const permission = agentPromptOf(_meta);
  return { optionId, name, kind, ...(permission && { permission }) };
}

/** Why a pending request ends at `now` without a human, or null while it still waits. */
export function lapseOf(row: { expires_at: number; lease_until: number | null }, now: number): Resolution | null {
  if (row.expires_at <= now) return { state: "expired", reason: "expired" };
  if (row.lease_until !== null && row.lease_until <= now) return { state: "denied", reason: "agent_disconnected" };
  return null;
}

export type DecisionCheck =
  | { ok: true; resolution: Resolution }
  /** A high-risk allow short of its quorum: recorded, the request stays pending. */
  | { ok: true; partial: Quorum }
  | {
      ok: false;
      error:
        | "role_may_not_decide"
        | "not_session_owner"
        | "option_not_offered"
        | "request_changed"
        | "request_truncated"
        | "step_up_required"
        | "step_up_wrong_request"
        | "second_approver_required";
    }
  /** The decision's `updatedInput` may not be taken (edit.ts): nothing was decided. */
  | {
      ok: false;
      error: "edit_not_supported" | "edit_needs_allow" | "invalid_request" | "private_not_editable";
      message: string;
    };

/**
 * Whether a human may take this decision on a pending approval, and what it resolves to. A
 * request whose snapshot was cut (`truncated`) is never allowed; an allow of a high-risk request
 * also needs its step-up and, under a quorum, another person (risk.ts); a deny never does.
 */
export function checkDecision(
  meta: ServedSession,
  pending: Approval,
  d: DecisionInput,
  now: number = Date.now(),
): DecisionCheck {
  const refused = mayDecide(meta, d);
  if (refused) return { ok: false, error: refused };
  if (d.dismiss) return dismissal(pending, d);
  const option = pending.options.find((o) => o.optionId === d.optionId);
  if (!option) return { ok: false, error: "option_not_offered" };
  if (d.requestHash !== pending.requestHash) return { ok: false, error: "request_changed" };
  const checked = d.updatedInput === undefined ? null : checkEdit(meta, pending, option.kind, d.updatedInput);
  if (checked && !checked.ok) return checked;
  const edit = checked?.edit;
  const state = isAllowKind(option.kind) ? "allowed" : "denied";
  const decidedBy = decidedByOf(d);
  const resolution: Resolution = {
    state,
    reason: "decided",
    optionId: option.optionId,
    decidedBy,
    ...(d.reason !== undefined && { message: d.reason }),
    ...(edit && { editedInput: edit.input, editedInputHash: edit.hash }),
  };
  if (state === "denied") return { ok: true, resolution };
  // Only what a human saw is allowed: a request cut to the stored-bytes limit can only be denied.
  if (pending.snapshot.truncated) return { ok: false, error: "request_truncated" };
  // An edit is classified again: one that makes the request high-risk needs a step-up bound to it.
  const allow = highRiskAllow(edit ? { ...pending, risk: edit.risk } : pending, d, decidedBy, now, edit?.hash);
  if (!allow.ok) return allow;
  if (!allow.complete) return { ok: true, partial: allow.quorum };
  return { ok: true, resolution: { ...resolution, ...(allow.quorum && { quorum: allow.quorum }) } };
}

/** Who decided, as the approval records it: `via` only when not the app, as before channels. */
export function decidedByOf(d: Pick<DecisionInput, "userId" | "name" | "device" | "via">): DecidedBy {
  return { userId: d.userId, name: d.name, device: d.device, ...(d.via && d.via !== "app" && { via: d.via }) };
}

/**
 * A decider dismissed the card: `cancelled`/`dismissed`, no option, so the agent is answered
 * `cancelled` (`agentAnswer`). Like a deny it needs no step-up and ends a quorum's partial allow.
 */
function dismissal(pending: Approval, d: DecisionInput): DecisionCheck {
  if (d.requestHash !== pending.requestHash) return { ok: false, error: "request_changed" };
  const decidedBy = decidedByOf(d);
  const message = d.reason !== undefined && { message: d.reason };
  return { ok: true, resolution: { state: "cancelled", reason: "dismissed", decidedBy, ...message } };
}

/** Whether this person may decide in this session at all (role, then `deciders` policy); the refusal, or null. */
export function mayDecide(meta: ServedSession, d: Pick<DecisionInput, "role" | "userId">) {
  if (!DECIDER_ROLES.includes(d.role)) return "role_may_not_decide" as const;
  if (meta.policy.deciders === "session_owner" && d.userId !== meta.ownerUserId) return "not_session_owner" as const;
  return null;
}

/** A decision on an approval that already left `pending`: taken by a human, or ended without one. */
export const lateDecisionError = (current: Approval) =>
  current.reason === "decided" || current.reason === "dismissed"
    ? ("already_decided" as const)
    : ("already_resolved" as const);

/**
 * Whether a decision repeats the one that ended the approval: the same person (from any of
 * their devices: a phone retrying after a lost answer), the same option, the same
 * `requestHash` (or both a dismissal by the same person). A repeat is answered the stored
 * result and changes nothing; anything else on a decided approval is a conflict.
 */
export function isRepeatDecision(
  current: Approval,
  d: Pick<DecisionInput, "userId" | "optionId" | "requestHash" | "updatedInput" | "dismiss">,
) {
  const sameDecider = current.decidedBy?.userId === d.userId && current.requestHash === d.requestHash;
  if (current.reason === "dismissed" || d.dismiss)
    return current.reason === "dismissed" && d.dismiss === true && sameDecider;
  return (
    current.reason === "decided" &&
    current.decidedBy?.userId === d.userId &&
    current.optionId === d.optionId &&
    current.requestHash === d.requestHash &&
    current.editedInputHash === (d.updatedInput === undefined ? undefined : editedInputHash(d.updatedInput))
  );
}

/**
 * The session's metadata after a join. A policy the hub pushed may be newer than the one the
 * Worker read for this join: the newer version wins. What `hello` told is kept.
 */
export function joinedMeta(known: ServedSession | null, join: GateJoin): ServedSession | null {
  const policy =
    join.policy === null || (known !== null && (known.policyVersion ?? 0) > join.policyVersion) ? known : join;
  // A join whose policy the hub could not tell, to a session that has none yet: nothing to serve it with.
  if (!policy?.policy) return null;
  return {
    teamId: join.teamId,
    sessionId: join.sessionId,
    ownerUserId: join.ownerUserId,
    policy: policy.policy,
    policyVersion: policy.policyVersion,
    info: known?.info ?? EMPTY_INFO,
  };
}

/** The metadata with a newer team policy, or null when the update is another team's or not newer. */
export function withPolicy(meta: ServedSession | null, teamId: string, update: VersionedPolicy): ServedSession | null {
  if (!meta || meta.teamId !== teamId || (meta.policyVersion ?? 0) >= update.version) return null;
  return { ...meta, policy: update.policy, policyVersion: update.version };
}

/** What `hello` tells about the session, over what was known. */
export function helloInfo(known: SessionInfo, params: HelloParams): SessionInfo {
  const parent = params.parent ?? known.parent;
  return {
    title: params.title ?? known.title,
    agent: params.agent ?? known.agent,
    host: params.host ?? known.host,
    cwd: params.cwd ?? known.cwd,
    ...(parent ? { parent } : {}),
  };
}

/**
 * An audit event for an approval. Ids, hashes and outcomes only: tool arguments never enter the
 * detail, but `requestHash` commits to the whole request the agent sent, `truncated` says when
 * the humans were shown a card cut to the team's stored-bytes limit (how many bytes were not
 * shown), and `option` says which of the offered options was chosen (null until one is).
 */
export function auditOp(meta: ServedSession, a: Approval, actor: string, action: string, at: number): OutboxOp {
  const chosen = a.options.find((o) => o.optionId === a.optionId);
  const detail = {
    sessionId: a.sessionId,
    state: a.state,
    reason: a.reason,
    requestHash: a.requestHash,
    truncated: a.snapshot.truncated?.bytesNotStored ?? null,
    optionId: a.optionId,
    option: chosen ? { name: chosen.name, kind: chosen.kind } : null,
    decidedBy: a.decidedBy,
    // An elicitation's answer is its action; the content a human typed stays out of the audit log.
    ...(a.type === "elicitation" && { action: a.action ?? null }),
    ...(a.rule && { rule: a.rule }),
    ...(a.message !== undefined && { message: a.message }),
    // An edited allow: the hash of the input the agent ran (the input itself, like every argument, stays out).
    ...(a.editedInputHash !== undefined && { editedInputHash: a.editedInputHash }),
    // A private request: the hash of its ciphertext (the envelope itself stays out, like any content).
    ...(a.sealed && { private: true, sealedHash: sealedHashOf(a.sealed) }),
  };
  return { op: "audit", eventId: `${a.id}:${action}`, teamId: meta.teamId, at, actor, action, subject: a.id, detail };
}
