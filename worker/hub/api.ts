/**
 * What the rest of the Worker may ask of a team's TeamHub, and how to reach it.
 *
 * Owns: the `TeamHubApi` interface (the hub's RPC surface), the news shapes SessionGates send, the quota ask and verdict,
 * the live-feed event, and `hubFor`. Does not own: any behaviour (see `team-hub.ts` and its
 * subsystems). Imports only types from `sdk/src`, `worker/policy.ts`, `db/devices.ts` and
 * the pure `../audit-chain.ts`, so `types.ts` can type `Env.TEAM_HUB` through it without an import cycle.
 */
import type { Approval, Delivery, EscalationEvent, Owner, SessionInfo, SessionStop } from "../../sdk/src/approval";
import type { Claim, ReceiptBody } from "../../sdk/src/human/approvals";
import type { EscalationStep, QuotaLimit, TeamLimits, TeamPolicy } from "../../sdk/src/human/policy";
import type { DeviceHealth, DisplayFigures, PlatformFigures } from "../../sdk/src/human/push";
import type { Role } from "../../sdk/src/human/roles";
import type { DeadLetteredSession } from "../../sdk/src/human/sessions";
import type { StandingRule } from "../../sdk/src/rules";
import type { AuditAnchors, AuditEvent } from "../audit-chain";
import type { OutboxOp } from "../db/approvals";
import type { DeviceRow } from "../db/devices";
import { REQUEST_BUDGET_MS, withDeadline } from "../deadline";
import type { KeyStanding } from "../gate/api";
import type { VersionedPolicy } from "../policy";

export type { AuditAnchors, AuditEvent, OutboxOp };

/** Who opened a live-feed socket: set by the Worker after it checked the cookie and Origin. */
export interface HubJoin {
  teamId: string;
  userId: string;
  /** The web session the socket belongs to, so signing out (or switching team) ends it. */
  tokenHash: string;
  /** When the session expires (idle or absolute) unless seen again: the socket closes then. */
  validUntil: number;
}

/**
 * A gate with an open socket reports to its hub at least this often (from its alarm), so the
 * hub can tell a live session from a row left by a gate that died without reporting.
 */
export const PRESENCE_REPORT_MS = 10 * 60 * 1000;
/** A "connected" session whose last report is older than this is not live: the hub marks it disconnected. */
export const SESSION_LIVE_MS = 3 * PRESENCE_REPORT_MS;

/** The hub's copy of a push device: D1's row without its timestamps. */
export type HubDevice = Omit<DeviceRow, "createdAt" | "lastSeenAt">;

/** What a SessionGate reports about a new request. */
export interface ApprovalNews {
  approval: Approval;
  ownerUserId: string;
  recipients: "session_owner" | "all_approvers";
  lockScreen: "tool_title" | "generic";
  /** The gate runs the escalation ladder: the hub only shows the request; pushes come from `escalate`. */
  ladder?: boolean;
}

/**
 * One escalation step a SessionGate asks its hub to run (the gate's `escalation.ts` decides when).
 * Carries the approval, so it works even if it overtakes `approvalCreated`. Run once per
 * (approval, step, phase): a repeat gets the first run's outcome.
 */
export interface EscalationOrder {
  approval: Approval;
  ownerUserId: string;
  step: number;
  /** "presence": the push after a person shown the card live had not seen it within 20 s. */
  phase: "step" | "presence";
  to: EscalationStep["to"];
  via: EscalationStep["via"];
  lockScreen: ApprovalNews["lockScreen"];
  /** Whose seeing stops the ladder (the policy's `deciders`): a climb stops there too. */
  deciders: TeamPolicy["deciders"];
  /**
   * The ladder's next steps, run in the same call one after another while each reached nobody
   * and held nothing: what the gate would otherwise fire at once, one call each.
   */
  climb?: ClimbStep[];
}

/** A further step of a climb: its index in the ladder, whom it goes to and how. */
export type ClimbStep = { step: number } & Pick<EscalationStep, "to" | "via">;

/** What a step did: how many devices, pages or mailboxes it reached, whose names, whether it held pushes for visible pages. */
export interface StepOutcome {
  reached: number;
  to: string[];
  held: boolean;
}

/** The ordered step's outcome and, for a climb, each further step that ran (in order). */
export interface EscalationOutcome extends StepOutcome {
  climbed?: Array<{ step: number; outcome: StepOutcome }>;
}

/** A service worker receipt (`POST /v1/approvals/:id/receipt`). */
export type ReceiptEvent = ReceiptBody["event"];

/** How a push device is doing (`GET /v1/devices`): its recent pushes failing, or taken but never shown. */
export type { DeviceHealth };

/** Shown ÷ sent over 7 days (`GET /v1/devices`, counted by `shown-counts.ts`). */
export interface DisplayReport {
  /** This user's devices, by id (devices with nothing sent in the window are absent). */
  devices: Record<string, DisplayFigures>;
  /** Every member's devices together, per push platform (platforms with nothing sent are absent). */
  platforms: PlatformFigures[];
}

/** What a SessionGate reports when its connection state or metadata may have changed. */
export interface SessionNews {
  sessionId: string;
  ownerUserId: string;
  info: SessionInfo;
  connected: boolean;
  pending: number;
  at: number;
  policyVersion: number;
  /** Outbox rows the gate could not write (dead letters, `outbox_dead`); absent from older gates. */
  deadLetters?: number;
  /** The session's stop (null: not stopped); absent from older gates, which cannot be stopped. */
  stopped?: SessionStop | null;
}

/**
 * One piece of news a SessionGate tells its hub, as part of a `gateReport`: each does what the
 * hub method of the same name does (`approvalCreated`, `approvalResolved`, `approvalUpdated`,
 * `sessionChanged`, `releaseRequest`).
 */
export type GateNews =
  | { kind: "created"; news: ApprovalNews }
  | { kind: "resolved"; approval: Approval; ownerUserId: string }
  | { kind: "updated"; approval: Approval; ownerUserId: string }
  | { kind: "session"; news: SessionNews }
  | { kind: "released"; approvalId: string };

/** What a gate's change tells its hub in one call: its news and, when the outbox flushes, the outbox's rows. */
export interface GateReport {
  news: GateNews[];
  ops?: OutboxOp[];
}

/** The team's policy when the hub knows a newer one than a `session` item's (a change that raced the gate's join). */
export interface GateReportAnswer {
  policy: VersionedPolicy | null;
}

/** A SessionGate asks the team's quotas before it holds a request. */
export interface QuotaAsk {
  approvalId: string;
  keyId: string;
  sessionId: string;
  ownerUserId: string;
  /** The request's expiry: its slot counts until then at the latest, even if no release comes. */
  expiresAt: number;
  /** The team's limits as the gate's copy of the policy has them. */
  limits: TeamLimits;
  /** The version of the gate's copy of the team policy; absent from an older gate. */
  policyVersion?: number;
  /** The bytes the request stores (its card as held), against the operator's daily ceiling; absent from an older gate. */
  storedBytes?: number;
  /**
   * The request as its gate would hold it, when a human could decide it: admitted, and with no
   * standing rule to apply, the hub shows it on the live feed at once (`LiveFeed.showAdmitted`).
   */
  card?: Approval;
}

/**
 * Admitted (with the standing rules that can apply to the session: the team's and its owner's,
 * from the hub's copy; absent from an older hub), or which limit the request is over and when
 * one more could pass.
 */
export type QuotaVerdict = (
  | { ok: true; rules?: StandingRule[] }
  | QuotaRefusal
  /** The request's key was revoked lately, or its revocation is still reaching the team's gates. */
  | { ok: false; keyRevoked: true }
) & {
  /**
   * The team's policy, when the hub knows a newer one than the gate's copy (a fan-out that missed
   * the gate): the gate takes it up before it holds the request, which is drafted again under it.
   */
  policy?: VersionedPolicy;
};

/** Over a quota: which limit, and when to try again. */
export type QuotaRefusal = { ok: false; limit: QuotaLimit; retryAfterMs: number };

/** What a revocation's first fan-out did: requests denied, sessions not told yet (told from the hub's alarm). */
export interface KeyRevocation {
  deniedRequests: number;
  unreachedSessions: number;
}

/**
 * A decider vouched for: the role they hold now (null: the route reads D1), and the standing of
 * the key that asked the request (null: this hub holds no slot for it, the gate asks itself).
 */
export interface DeciderVouch {
  role: Role | null;
  key: KeyStanding | null;
}

/** A claim taken, or the request as the hub knows it when it has already ended. */
export type ClaimResult = { ok: true; claim: Claim } | { ok: false; approval: Approval };

/** The live feed's events (sdk/src/human/live.ts): approvals carry `owner` and `delivery`. */
export type { LiveApproval, LiveEvent } from "../../sdk/src/human/live";
/** A session whose outbox dead-lettered rows, for the dashboard (`GET /v1/sessions`). */
export type { DeadLetteredSession };

/**
 * The TeamHub's RPC surface. Methods that may be a hub's first call name the team (hubs are
 * named by team id, and the hub keeps it for its alarms).
 */
export interface TeamHubApi extends Rpc.DurableObjectBranded {
  /** The live feed: a WebSocket upgrade built by `hubJoinRequest` (live-feed.ts). */
  fetch(request: Request): Promise<Response>;

  /** A SessionGate opened a request: shown live, pushed to the recipients' devices as each one's budget allows. */
  approvalCreated(teamId: string, news: ApprovalNews): Promise<void>;
  /** A request left `pending`: shown live; unsent pushes dropped, sent notifications closed. */
  approvalResolved(teamId: string, approval: Approval, ownerUserId: string): Promise<void>;
  /** A pending request changed (a high-risk quorum's first allow): shown live, nothing pushed. */
  approvalUpdated(teamId: string, approval: Approval, ownerUserId: string): Promise<void>;
  /**
   * Counts a new request against the team's quotas (pending per team and per key, requests per
   * key per minute), before the gate holds it. Answers from the hub's own SQLite, no D1.
   */
  admitRequest(teamId: string, ask: QuotaAsk): Promise<QuotaVerdict>;
  /**
   * The team's standing rules changed in D1: the hub's copy reads them again. Resolves once the
   * copy has them, so the next admission hands out the change (docs/human-api.md "Standing rules").
   */
  rulesChanged(teamId: string): Promise<void>;
  /**
   * An admitted request was not held after all: its slot is free, and a card shown at admission
   * is taken down (`withdrawn`). Ends of held requests release them by `approvalResolved`.
   */
  releaseRequest(teamId: string, approvalId: string): Promise<void>;
  /** The service worker saw the push on this device; false when it was not this user's push. */
  markSeen(approvalId: string, deviceId: string, userId: string): Promise<boolean>;
  /** Where a request's pushes went, device by device. */
  deliveries(approvalId: string): Promise<Delivery[]>;
  /** Runs one escalation step of a request (once per step and phase; a repeat answers the first outcome). */
  escalate(teamId: string, order: EscalationOrder): Promise<EscalationOutcome>;
  /** The escalation steps that ran for a request, oldest first. */
  timeline(approvalId: string): Promise<EscalationEvent[]>;
  /** A service worker receipt for this user's device; false when it was not this user's push. */
  markReceipt(approvalId: string, deviceId: string, userId: string, event: ReceiptEvent): Promise<boolean>;
  /** How each of this user's devices is doing, by device id (devices with no recent pushes are absent). */
  deviceHealth(userId: string): Promise<Record<string, DeviceHealth>>;
  /** Shown ÷ sent over 7 days: this user's devices, and the team's per push platform (`now`: tests move the day). */
  displayReport(userId: string, now?: number): Promise<DisplayReport>;

  /**
   * "Ada is looking": `by` claims a pending request for 2 minutes (renewed by claiming again);
   * the live feed gets `claimed`. Not a lock. Refused once the hub knows the request ended.
   */
  claim(teamId: string, approval: Approval, by: Owner): Promise<ClaimResult>;
  /** Who is looking at a request at `now` (the latest claim still running then), or null. */
  claimOf(approvalId: string, now?: number): Promise<Claim | null>;

  deviceSaved(teamId: string, device: HubDevice): Promise<void>;
  deviceRemoved(deviceId: string): Promise<void>;
  /** Queues a test push to one of this user's devices; false when it is not theirs. */
  sendTest(teamId: string, deviceId: string, userId: string): Promise<boolean>;
  /** Members or roles changed: read them (and the standing rules they may hold) again from D1. */
  forgetDirectory(): Promise<void>;

  /** Ends a member's live sockets (sign-out everywhere, removal from the team). */
  closeSocketsOf(userId: string): Promise<void>;
  /**
   * One web session ended here: signed out, ended from another device, or moved to another team.
   * Its live sockets close, and the hub vouches for no cached copy of it (`currentRole`).
   */
  closeWebSession(tokenHash: string): Promise<void>;
  /**
   * The role the holder of this web session has in the team now, or null when the hub cannot
   * vouch for it (the session ended here lately, or they are no member): the route reads D1.
   */
  currentRole(tokenHash: string, userId: string): Promise<Role | null>;
  /**
   * `currentRole`, for a decision on `approvalId`, with the standing of the key that asked it in
   * the same call (`key`: whether it was revoked lately or is still being fanned out; null when
   * this hub holds no slot for the request): the gate then needs no call of its own before an
   * allow (`gate/key-check.ts`).
   */
  vouchDecider(tokenHash: string, userId: string, approvalId: string): Promise<DeciderVouch>;
  /**
   * An agent key of the team was revoked in D1: the hub vouches for no cached copy of it
   * (`keyInUse`), refuses it at admission, and tells every session of `sessionIds` (the ones it
   * opened), durably: the first now, the rest and any that failed from its alarm, until each
   * acknowledged (`revocations.ts`). Answers once the first calls are answered, or
   * FANOUT_ANSWER_MS after they began: a gate slower than that is counted in `unreachedSessions`
   * and told after.
   */
  keyRevoked(teamId: string, keyId: string, sessionIds: string[]): Promise<KeyRevocation>;
  /**
   * Whether an agent key the Worker has cached is still in use: not revoked lately, its holder
   * still a member. False when the hub cannot vouch for it: the Worker reads D1.
   */
  keyInUse(keyId: string, userId: string): Promise<boolean>;
  /**
   * Whether key `keyId` was revoked within REVOKED_MEMORY_MS or its revocation is still being
   * fanned out: asked by a gate before a human's allow is claimed (`gate/key-check.ts`).
   */
  keyRevokedLately(keyId: string): Promise<boolean>;

  /**
   * A session connected, disconnected or changed its metadata. Answers the team's policy when
   * the hub knows a newer one than the gate's (a change that raced the gate's join).
   */
  sessionChanged(teamId: string, news: SessionNews): Promise<VersionedPolicy | null>;
  /** The team's sessions whose outbox dead-lettered rows, most recent first (at most 100). */
  deadLettered(teamId: string): Promise<DeadLetteredSession[]>;
  /** The team's current policy (read from D1, so never older than the hub's copy). */
  policy(teamId: string): Promise<VersionedPolicy>;
  /**
   * The policy changed in D1: the hub takes it up and hands it to every live session (a report
   * within SESSION_LIVE_MS), at most 40 calls per invocation, 20 at a time; the rest continue
   * from the hub's alarm. Resolves once the first 40 have answered or failed, or after
   * FANOUT_ANSWER_MS (the slower ones are told after); a gate that missed it gets it from the
   * hub's answer to its next admission (before the request is held), when it next reports, or at
   * its next join.
   */
  policyChanged(): Promise<void>;

  /** Appends events to the team's audit chain, in order; resolves once D1 has every one. */
  appendAudit(events: AuditEvent[]): Promise<void>;
  /**
   * A SessionGate's outbox batch: its D1 index rows and audit events, written with whatever
   * other sessions of the team sent meanwhile in one D1 batch (the audit writer's group
   * commit); resolves once D1 has every one.
   */
  writeOutbox(teamId: string, ops: OutboxOp[]): Promise<void>;
  /**
   * A SessionGate's change in one call (gate-report.ts): its news, taken up before the rows are
   * written, so a slow or failing D1 delays no news; then its outbox rows as `writeOutbox` does.
   * Resolves once D1 has every row; rejects when the write failed (the gate retries the rows,
   * not the news).
   */
  gateReport(teamId: string, report: GateReport): Promise<GateReportAnswer>;
  /** Chains the events the routes queued in D1 (`audit_outbox`); rejects when D1 or the chain failed. */
  drainAudit(teamId: string): Promise<void>;
  /** Sends the team's due webhook messages from the alarm (`webhooks/deliveries.ts`). */
  webhooksDue(teamId: string): Promise<void>;
  /** After draining: the head the hub last wrote (its anchor), and the first anchor found broken. */
  auditAnchors(teamId: string): Promise<AuditAnchors>;
}

/** The team's hub. */
export function hubFor(env: { TEAM_HUB: DurableObjectNamespace<TeamHubApi> }, teamId: string) {
  return env.TEAM_HUB.get(env.TEAM_HUB.idFromName(teamId));
}

/**
 * Tells a team's hub that a web session ended (its feed sockets close, it vouches for it no
 * more), waiting at most REQUEST_BUDGET_MS: past it `DeadlineExceeded` (`503
 * service_unavailable`); the end stands in D1, and the feed checks D1 before every event.
 */
export function closeWebSessionAtHub(
  env: { TEAM_HUB: DurableObjectNamespace<TeamHubApi> },
  teamId: string,
  tokenHash: string,
): Promise<void> {
  return withDeadline(hubFor(env, teamId).closeWebSession(tokenHash), REQUEST_BUDGET_MS, "hub.closeWebSession");
}
