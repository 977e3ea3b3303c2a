/**
 * What a SessionGate needs from its team's TeamHub, and the one way it tells it.
 *
 * Owns: the narrow `GateHub` interface and `tellHub` (and passes on `PRESENCE_REPORT_MS`, how
 * often a connected session reports). This is the only gate file that imports
 * the hub's module; the rest of the gate sees only `GateHub`. Does not own: what the hub does
 * with the news (live feed, pushes, the audit chain).
 */
import type { Approval } from "../../sdk/src/approval";
import {
  type ApprovalNews,
  type AuditEvent,
  hubFor,
  type OutboxOp,
  PRESENCE_REPORT_MS,
  type QuotaAsk,
  type QuotaVerdict,
  type SessionNews,
} from "../hub/api";
import type { VersionedPolicy } from "../policy";
import type { Env } from "../types";

export type { ApprovalNews, AuditEvent, QuotaAsk, QuotaVerdict, SessionNews };
export { PRESENCE_REPORT_MS };

/** The part of a TeamHub a SessionGate calls. */
export interface GateHub {
  /** A request was opened: shown live, pushed to phones. */
  approvalCreated(teamId: string, news: ApprovalNews): Promise<void>;
  /** A request left `pending`. */
  approvalResolved(teamId: string, approval: Approval, ownerUserId: string): Promise<void>;
  /** A pending request changed (a quorum's first allow): shown live. */
  approvalUpdated(teamId: string, approval: Approval, ownerUserId: string): Promise<void>;
  /** Connection state or metadata changed; answers a newer team policy when the hub knows one. */
  sessionChanged(teamId: string, news: SessionNews): Promise<VersionedPolicy | null>;
  /** Counts a new request against the team's quotas before it is held (admission.ts). */
  admitRequest(teamId: string, ask: QuotaAsk): Promise<QuotaVerdict>;
  /** An admitted request was not held after all. */
  releaseRequest(teamId: string, approvalId: string): Promise<void>;
  /** The outbox's rows (D1 index and audit chain), group-committed per team; resolves once D1 has every one. */
  writeOutbox(teamId: string, ops: OutboxOp[]): Promise<void>;
}

export function gateHub(env: Env, teamId: string): GateHub {
  return hubFor(env, teamId);
}

/**
 * News for the team's hub, in the background. Never awaited on the agent's path: a slow or
 * failing push must not delay or fail a request.
 */
export function tellHub(
  ctx: DurableObjectState,
  env: Env,
  teamId: string,
  news: (hub: GateHub) => Promise<unknown>,
): void {
  ctx.waitUntil(news(gateHub(env, teamId)).catch(() => undefined));
}
