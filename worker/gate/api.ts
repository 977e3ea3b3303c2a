/**
 * What the rest of the Worker may ask of a SessionGate, and how to reach one.
 *
 * Owns: the `SessionGateApi` interface (the gate's RPC surface), its input and result types, and
 * the stub getters `sessionGate` / `gateFor`. Results carry an `ErrorCode` from
 * `sdk/src/errors.ts`, never an HTTP status: the routes map codes to statuses with `apiError`.
 * Does not own: any behaviour (see `session-gate.ts` and its subsystems). Imports only from
 * `sdk/src` and `worker/policy.ts`, so `types.ts` can type `Env.SESSION_GATE` through it
 * without an import cycle.
 */
import type { Approval, ApprovalState, DecidedBy, Owner, ResolutionReason, SessionStop } from "../../sdk/src/approval";
import type { OfferedRule } from "../../sdk/src/card-rules";
import type { AgentAsk, CreateElicitationResponse, ElicitationAction } from "../../sdk/src/elicitation-protocol";
import type { ErrorCode } from "../../sdk/src/errors";
import type { HighRiskPattern, QuotaLimit } from "../../sdk/src/human/policy";
import type { Role } from "../../sdk/src/human/roles";
import type { RuleChoice, RuleMatch } from "../../sdk/src/human/rules";
import type { BoundStepUpAssertion } from "../../sdk/src/human/step-up";
import type { HelloParams, Progress, RequestPermissionResponse } from "../../sdk/src/protocol";
import { REQUEST_BUDGET_MS, withDeadline } from "../deadline";
import type { TeamPolicy, VersionedPolicy } from "../policy";

/** The longest an HTTP agent's poll may wait: under the 60 s idle timeout of common proxies. */
export const MAX_WAIT_SECONDS = 50;

/** Who joins a session (socket or HTTP): set by the Worker after it checked the API key. */
export interface GateJoin {
  teamId: string;
  sessionId: string;
  ownerUserId: string;
  keyId: string;
  userId: string;
  /** The team's policy as its hub has it; null when the hub did not answer in time (the session keeps its last one). */
  policy: TeamPolicy | null;
  policyVersion: number;
}

/** The agent calling over HTTP, from its API key. */
export interface AgentCaller {
  teamId: string;
  userId: string;
  keyId: string;
}

/** A human's decision, from the signed-in web identity. */
export interface DecisionInput {
  approvalId: string;
  teamId: string;
  userId: string;
  name: string;
  /** The decider's team role; the gate checks it against `DECIDER_ROLES`. */
  role: Role;
  device: string;
  /** A permission's answer: one of its offered options. */
  optionId?: string;
  /** A permission's card dismissed (instead of `optionId`): it ends `cancelled`/`dismissed`, answered `cancelled`. */
  dismiss?: true;
  /** An elicitation's answer (instead of `optionId`): the action, and with `accept` of a form its content. */
  action?: ElicitationAction;
  content?: Record<string, unknown>;
  requestHash: string;
  /** Also make a standing `me` rule from this request (the card's "Allow for 1 h"): checked by the gate. */
  rule?: { expiresInMs: number; choice?: RuleChoice; match?: RuleMatch };
  /** The decider's words to the agent (the body's `reason`): the approval's `message`. */
  reason?: string;
  /** Allow with this tool input instead of the request's (checked by the gate, `gate/edit.ts`). */
  updatedInput?: Record<string, unknown>;
  /** A passkey assertion the Worker verified for this person, approval, requestHash and option (team/step-up.ts). */
  stepUp?: VerifiedStepUp;
  /**
   * With `stepUp`: the members who hold a deciding role now (D1, read as the step-up was
   * verified). An earlier allow of a quorum by anyone else no longer counts (`gate/risk.ts`).
   */
  deciders?: string[];
  /** Where the decision was taken: `"app"` (the default) or a channel's card (`team/channel-decision.ts`). */
  via?: DecisionVia;
  /**
   * The hub's word on the request's agent key, asked with the decider's role (`vouchDecider`):
   * for that key, the gate asks the hub nothing more before an allow (`key-check.ts`).
   */
  keyStanding?: KeyStanding;
}

/** Whether an agent key was revoked lately or is still being fanned out, as the team's hub knows it. */
export interface KeyStanding {
  keyId: string;
  revoked: boolean;
}

export type DecisionVia = NonNullable<DecidedBy["via"]>;

/** What the gate offers a card (`ruleChoices`): empty `choices` where no rule may be made. */
export interface GateRuleChoices {
  choices: Array<OfferedRule & { sentence: string }>;
  highRisk: HighRiskPattern[];
}

/** A step-up assertion the Worker verified, with what its challenge committed to. */
export type VerifiedStepUp = BoundStepUpAssertion;

/**
 * `ok`: decided, now or by this same person's same decision before (an idempotent repeat: the
 * stored approval). Otherwise why not, with the approval as it stands where that helps.
 */
export type DecisionResult =
  /** `ruleMatch`: what the rule asked for must match, when this decision allowed with `rule` (not on a repeat). */
  | { ok: true; approval: Approval; ruleMatch?: RuleMatch }
  /** `rule` was asked for, but no rule (or not the choice asked for) may be made from this request: nothing was decided. */
  | { ok: false; error: Extract<ErrorCode, "rule_not_possible" | "rule_choice_not_offered">; message: string }
  | {
      ok: false;
      error: Extract<
        ErrorCode,
        "already_decided" | "already_resolved" | "request_changed" | "second_approver_required"
      >;
      approval: Approval;
    }
  | {
      ok: false;
      error: Extract<
        ErrorCode,
        | "option_not_offered"
        | "request_truncated"
        | "not_session_owner"
        | "role_may_not_decide"
        | "not_found"
        | "step_up_required"
        | "step_up_wrong_request"
      >;
    }
  /** The decision's `updatedInput` may not be taken (`gate/edit.ts`): nothing was decided. */
  | {
      ok: false;
      error: Extract<ErrorCode, "edit_not_supported" | "edit_needs_allow" | "invalid_request" | "private_not_editable">;
      message: string;
    }
  /** An elicitation's content does not fit its form: `field` names where (the message never echoes the value). */
  | { ok: false; error: Extract<ErrorCode, "invalid_content">; field: string; message: string };

/** Who stops a session, from where (the device the decision header names), and their words to the agent. */
export interface StopInput {
  by: Owner;
  device: string;
  reason?: string;
}

/** The session's stop as it is now (null once resumed), and how many pending requests the call denied. */
export interface StopResult {
  stopped: SessionStop | null;
  denied: number;
}

export type HttpOpenResult =
  | { ok: true; approvalId: string; expiresAt: number }
  | {
      ok: false;
      error: Extract<
        ErrorCode,
        "invalid_request" | "key_revoked" | "policy_unavailable" | "too_many_pending" | "internal_error"
      >;
      message: string;
      issues?: unknown[];
      /** `private_required`: an unsealed request in a private team (docs/agent-protocol.md "Private requests"). */
      reason?: "private_required";
    }
  /** Someone stopped the session: refused until it is resumed (`stopped`: who, when, why). */
  | { ok: false; error: Extract<ErrorCode, "session_stopped">; message: string; stopped: SessionStop }
  /** Over a team quota (`limit` named), or the quotas could not be checked: retry after `retryAfterMs`. */
  | {
      ok: false;
      error: Extract<ErrorCode, "quota_exceeded" | "quota_unavailable">;
      message: string;
      limit?: QuotaLimit;
      retryAfterMs: number;
    };

/** Where an HTTP-held request stands: still pending, or its final answer. */
export type HttpPollBody =
  /** `progress`: where it stands (`_tapgate/progress`, with `requestId` the approval id). */
  | { approvalId: string; state: "pending"; expiresAt: number; progress?: Progress }
  /** A final body is itself an ACP RequestPermissionResponse: its `outcome` is what the agent acts on. */
  | ({ approvalId: string; state: Exclude<ApprovalState, "pending">; reason: ResolutionReason | null } & Pick<
      RequestPermissionResponse,
      "outcome" | "_meta"
    >)
  /** An elicitation's final body is itself an ACP `elicitation/create` result: act on `action` (and `content`). */
  | ({ approvalId: string; state: Exclude<ApprovalState, "pending">; reason: ResolutionReason | null } & Pick<
      CreateElicitationResponse,
      "action" | "content" | "_meta"
    >);

/** Unknown ids, another team's and another user's all get the same `not_found`. */
export type HttpPollResult = { ok: true; body: HttpPollBody } | { ok: false; error: Extract<ErrorCode, "not_found"> };

/** Where a request's pushes went and who saw it, as the team's hub tells the gate (`deliveryChanged`). */
export interface DeliveryReceipts {
  /** Devices the push service took it for (`shownAt` once shown), and open pages it was shown on (`device: "app"`). */
  deliveredTo: Array<{ userId: string; name: string; device: string; at: number; shownAt?: number }>;
  /** People who may decide and saw it: a device showed or opened it, or a visible page showed it. */
  seenBy: Array<{ userId: string; name: string; at: number }>;
  /** Who said they are looking at it ("Ada is looking", a claim), and since when; absent when nobody is. */
  claimedBy?: { name: string; at: number };
}

/** The SessionGate's RPC surface: what routes and the team's hub may call. */
export interface SessionGateApi extends Rpc.DurableObjectBranded {
  /** The agent's socket: a WebSocket upgrade built by `joinRequest` (sockets.ts). */
  fetch(request: Request): Promise<Response>;

  /** An approval of this session as the gate holds it; null for another team's or unknown ids. */
  getApproval(teamId: string, approvalId: string): Promise<Approval | null>;
  /** A human decides a pending approval. */
  decide(d: DecisionInput): Promise<DecisionResult>;
  /**
   * The rules this person's card may make from a pending approval (`sdk/src/card-rules.ts`),
   * with the session's high-risk patterns they were offered under; null for another team's or
   * unknown ids.
   */
  ruleChoices(teamId: string, approvalId: string, userId: string): Promise<GateRuleChoices | null>;
  /** The hub's receipts for a pending request changed: its ladder stops once seen, and its agent hears the progress. */
  deliveryChanged(teamId: string, approvalId: string, receipts: DeliveryReceipts): Promise<void>;
  /** The verified step-up assertions an approval's allows carried; null for another team's or unknown ids. */
  stepUps(teamId: string, approvalId: string): Promise<{ approval: Approval; stepUps: VerifiedStepUp[] } | null>;

  /** A revoked key: its pending requests are denied and its sockets closed; how many were denied. */
  revokeKey(teamId: string, keyId: string): Promise<number>;
  /**
   * Someone stops the session: its pending requests are denied (`session_stopped`), new ones
   * refused until `resume`; null for another team's session or one the gate never served.
   */
  stop(teamId: string, input: StopInput): Promise<StopResult | null>;
  /** The session's owner or an admin resumes it: new requests are held again. Null as for `stop`. */
  resume(teamId: string, by: Owner): Promise<StopResult | null>;
  /** The team's policy changed: requests opened from now on use it. False if it was not newer. */
  applyPolicy(teamId: string, update: VersionedPolicy): Promise<boolean>;
  /**
   * Delivers the outbox, then replays every dead letter now (each alone): how many landed and
   * how many are left; null for another team's session or one the gate never served.
   */
  replayDeadLetters(teamId: string): Promise<{ replayed: number; deadLetters: number } | null>;

  /**
   * Holds a request for an agent that polls instead of holding a socket; `info` is what a
   * socket's `_tapgate/hello` would tell (the HTTP hook endpoint sends it).
   */
  openOverHttp(join: GateJoin, params: AgentAsk, info?: HelloParams): Promise<HttpOpenResult>;
  /** Answers once the approval is resolved or `waitMs` has passed; every poll renews the lease. */
  poll(caller: AgentCaller, approvalId: string, waitMs: number): Promise<HttpPollResult>;
  /** The agent gives a request up: `cancelled` while pending, else its final answer again. */
  cancelOverHttp(caller: AgentCaller, approvalId: string): Promise<HttpPollResult>;
  /** The agent's HTTP session closed: its lease-held pending requests end `agent_disconnected`; how many. */
  disconnectHttp(caller: AgentCaller): Promise<number>;
}

type GateNamespace = { SESSION_GATE: DurableObjectNamespace<SessionGateApi> };

/** The SessionGate of an agent session. */
export function sessionGate(env: GateNamespace, teamId: string, sessionId: string) {
  return env.SESSION_GATE.get(env.SESSION_GATE.idFromName(`${teamId}/${sessionId}`));
}

/** Approval ids name their Durable Object, so a decision is routed without a D1 lookup. */
const APPROVAL_ID_PATTERN = /^apr_([0-9a-f]{64})_[0-9A-Za-z]{22}$/;

/**
 * A route's read of one request as its gate keeps it (null: not this team's), bounded: a gate
 * that does not answer within REQUEST_BUDGET_MS is a `DeadlineExceeded` (`503`).
 */
export async function approvalAtGate(
  gate: DurableObjectStub<SessionGateApi>,
  teamId: string,
  approvalId: string,
): Promise<Approval | null> {
  // RPC stub types reject `unknown` JSON fields as unserialisable; the values are plain JSON.
  const read = gate.getApproval(teamId, approvalId) as Promise<unknown> as Promise<Approval | null>;
  return withDeadline(read, REQUEST_BUDGET_MS, "gate.getApproval");
}

/** The SessionGate an approval id names, or null for ids that cannot be ours. */
export function gateFor(env: GateNamespace, approvalId: string) {
  const hex = APPROVAL_ID_PATTERN.exec(approvalId)?.[1];
  if (!hex) return null;
  try {
    return env.SESSION_GATE.get(env.SESSION_GATE.idFromString(hex));
  } catch {
    return null;
  }
}
