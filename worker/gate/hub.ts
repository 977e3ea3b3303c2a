/**
 * What a SessionGate needs from its team's TeamHub, and how it tells it: `HubMail`, which sends
 * each change's news in one `gateReport` call, with the outbox's rows when the outbox flushes
 * then.
 *
 * Owns: the narrow `GateHub` interface, the mail (news queued during a change, sent at its end)
 * and passing on `PRESENCE_REPORT_MS`, how often a connected session reports. This is the only
 * gate file that imports the hub's module; the rest of the gate sees only `GateHub` and
 * `GateNews`. Does not own: what the hub does with the news (live feed, pushes, the audit chain)
 * or the outbox's rows and retries (outbox.ts).
 */
import { ALARM_BUDGET_MS, withDeadline } from "../deadline";
import {
  type ClimbStep,
  type EscalationOrder,
  type EscalationOutcome,
  type GateNews,
  type GateReport,
  type GateReportAnswer,
  hubFor,
  PRESENCE_REPORT_MS,
  type QuotaAsk,
  type QuotaVerdict,
} from "../hub/api";
import type { VersionedPolicy } from "../policy";
import type { Env } from "../types";

export type { ClimbStep, EscalationOrder, EscalationOutcome, GateNews, GateReportAnswer, QuotaAsk, QuotaVerdict };
export { PRESENCE_REPORT_MS };

/** The part of a TeamHub a SessionGate calls. */
export interface GateHub {
  /** Counts a new request against the team's quotas before it is held (admission.ts). */
  admitRequest(teamId: string, ask: QuotaAsk): Promise<QuotaVerdict>;
  /** Runs one escalation step of a request (escalation.ts); once per step and phase. */
  escalate(teamId: string, order: EscalationOrder): Promise<EscalationOutcome>;
  /** Whether an agent key was revoked lately, or its revocation is still being fanned out (key-check.ts). */
  keyRevokedLately(keyId: string): Promise<boolean>;
  /** A change's news and (when the outbox flushes) its rows; resolves once D1 has every row. */
  gateReport(teamId: string, report: GateReport): Promise<GateReportAnswer>;
}

export function gateHub(env: Env, teamId: string): GateHub {
  return hubFor(env, teamId);
}

export interface HubMailHost {
  hub(teamId: string): GateHub;
  /** Keeps the object alive for a call nobody awaits. */
  background(work: Promise<unknown>): void;
  /** Starts the outbox's flush when one is due now (not empty, not backing off): it takes the mail along (`take`). */
  flushOutbox(): void;
  /** The hub knows a newer team policy than the session's. */
  newerPolicy(teamId: string, policy: VersionedPolicy): void;
}

/**
 * News for the team's hub, never awaited on the agent's path: a slow or failing push must not
 * delay or fail a request. News posted during a change waits only for the change's end (a
 * microtask), so what one change tells travels in one call.
 */
export class HubMail {
  private readonly queued = new Map<string, GateNews[]>();
  private scheduled = false;

  constructor(private readonly host: HubMailHost) {}

  post(teamId: string, news: GateNews): void {
    const list = this.queued.get(teamId);
    if (list) list.push(news);
    else this.queued.set(teamId, [news]);
    if (this.scheduled) return;
    this.scheduled = true;
    // News posted outside a change, or before an async change's end, is not kept waiting.
    queueMicrotask(() => {
      if (this.scheduled) this.send();
    });
  }

  /**
   * At a change's end: the outbox flushes when it is due, carrying the queued news; news it did
   * not carry (no rows to write, backing off, or a flush already on its way) goes alone.
   */
  send(): void {
    this.scheduled = false;
    this.host.flushOutbox();
    for (const [teamId, news] of this.queued) {
      const report = this.host.hub(teamId).gateReport(teamId, { news });
      this.host.background(
        withDeadline(report, ALARM_BUDGET_MS, "hub.gateReport")
          .then((answer) => this.answered(teamId, answer))
          .catch(() => undefined),
      );
    }
    this.queued.clear();
  }

  /** Takes the team's queued news, for the outbox's flush to carry. */
  take(teamId: string): GateNews[] {
    const news = this.queued.get(teamId) ?? [];
    this.queued.delete(teamId);
    return news;
  }

  answered(teamId: string, answer: GateReportAnswer): void {
    if (answer.policy) this.host.newerPolicy(teamId, answer.policy);
  }
}
