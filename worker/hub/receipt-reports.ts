/**
 * Where each pending request stands, and telling its gate: the devices the push service took it
 * for, the visible pages shown it, the channels that posted it, the people who saw it and who is
 * looking (its receipts), sent to the request's SessionGate, whose ladder stops once the request
 * is seen and whose agent hears the progress.
 *
 * Owns: the receipts' shape, and the reports to gates: in the background, one at a time per
 * request so the gate ends with the latest, and only when they changed since it was last told.
 * Does not own: the tables it reads (pushes: `push-queue.ts`; `live_cards`: `escalation.ts`;
 * channel posts: `channel-posts.ts`; claims: `claims.ts`; the feed's `approvals`: `live-feed.ts`)
 * or when the ladder climbs (`escalation.ts`, and the gate's alarm).
 */
import { CLAIM_MS, type Claim } from "../../sdk/src/human/approvals";
import { ALARM_BUDGET_MS, withDeadline } from "../deadline";
import { type DeliveryReceipts, gateFor } from "../gate/api";
import type { ChannelPosts } from "./channel-posts";
import type { Directory } from "./directory";
import type { HubHost } from "./host";
import type { PushQueue } from "./push-queue";

type Receipts = DeliveryReceipts;

/** The device name a card shown on an open page goes by in `deliveredTo`. */
const LIVE_DEVICE = "app";

export interface ReportHooks {
  /** Runs work after the answer (the hub's waitUntil). */
  background(work: Promise<unknown>): void;
  /** The claim running on a request now (claims.ts), for the agent's progress. */
  claimOf(approvalId: string): Claim | null;
}

export class ReceiptReports {
  /**
   * The receipts each pending request's gate was last told (JSON), so a report that changes
   * nothing is not sent. In memory: a restarted hub tells each gate once more.
   */
  private readonly told = new Map<string, string>();
  /** Requests whose receipts report is on its way to the gate, and those to report again after it. */
  private readonly reporting = new Set<string>();
  private readonly reportAgain = new Set<string>();

  constructor(
    private readonly host: HubHost,
    private readonly directory: Directory,
    private readonly push: PushQueue,
    private readonly channels: ChannelPosts,
    private readonly hooks: ReportHooks,
  ) {}

  /** Where a request stands: devices the push service took it for, pages shown it, people who saw it. */
  receipts(approvalId: string): Receipts {
    const deliveredTo: Receipts["deliveredTo"] = [];
    const seen = new Map<string, number>();
    const saw = (userId: string, at: number | null | undefined) => {
      if (at === null || at === undefined || !this.directory.isDecider(userId)) return;
      seen.set(userId, Math.min(seen.get(userId) ?? at, at));
    };
    for (const d of this.push.deliveries(approvalId)) {
      const shownAt = d.displayedAt ?? d.seenAt ?? undefined;
      if (d.deliveredAt !== null) {
        const name = this.directory.nameOf(d.userId);
        deliveredTo.push({
          userId: d.userId,
          name,
          device: d.deviceName,
          at: d.deliveredAt,
          ...(shownAt ? { shownAt } : {}),
        });
      }
      saw(d.userId, d.seenAt);
      saw(d.userId, d.openedAt);
    }
    deliveredTo.push(...this.channels.delivered(approvalId));
    const cards = this.host.sql
      .exec("SELECT user_id, shown_at, seen_at FROM live_cards WHERE approval_id = ? ORDER BY shown_at", approvalId)
      .toArray();
    for (const c of cards) {
      const userId = c.user_id as string;
      const at = c.shown_at as number;
      deliveredTo.push({ userId, name: this.directory.nameOf(userId), device: LIVE_DEVICE, at, shownAt: at });
      saw(userId, c.seen_at as number | null);
    }
    const seenBy = [...seen].map(([userId, at]) => ({ userId, name: this.directory.nameOf(userId), at }));
    const claim = this.hooks.claimOf(approvalId);
    const claimedBy = claim && { name: claim.by.name, at: claim.until - CLAIM_MS };
    return { deliveredTo, seenBy: seenBy.sort((a, b) => a.at - b.at), ...(claimedBy && { claimedBy }) };
  }

  /**
   * Tells the request's gate where it stands, in the background, while it is pending; only when
   * that changed since it was last told. Each step that reached nobody reports the same empty
   * receipts, and each telling costs the gate a storage commit.
   */
  report(approvalId: string): void {
    const teamId = this.host.teamId();
    const gate = gateFor(this.host.env, approvalId);
    if (!teamId || !gate || !this.isPending(approvalId)) return;
    // One report at a time per request, each with the receipts as they are when it leaves: two
    // never cross on the way, so the gate ends with the latest. A report asked for meanwhile is
    // sent by the one on its way (in its own request, whose stub it uses), after it.
    if (this.reporting.has(approvalId)) {
      this.reportAgain.add(approvalId);
      return;
    }
    this.reporting.add(approvalId);
    const work = (async () => {
      do {
        this.reportAgain.delete(approvalId);
        await this.tell(teamId, approvalId, gate);
      } while (this.reportAgain.has(approvalId));
    })().finally(() => this.reporting.delete(approvalId));
    this.hooks.background(work);
  }

  /** Sends the gate the request's receipts unless it was last told the same; a failure is retried by the next report. */
  private async tell(teamId: string, approvalId: string, gate: NonNullable<ReturnType<typeof gateFor>>) {
    if (!this.isPending(approvalId)) return;
    const receipts = this.receipts(approvalId);
    const text = JSON.stringify(receipts);
    if (this.told.get(approvalId) === text) return;
    try {
      await withDeadline(gate.deliveryChanged(teamId, approvalId, receipts), ALARM_BUDGET_MS, "gate.deliveryChanged");
      if (this.isPending(approvalId)) this.told.set(approvalId, text);
    } catch {
      this.told.delete(approvalId);
    }
  }

  private isPending(approvalId: string): boolean {
    return (
      this.host.sql.exec("SELECT 1 FROM approvals WHERE id = ? AND state = 'pending'", approvalId).toArray().length > 0
    );
  }

  /** A resolved request's gate is told nothing more. */
  resolved(approvalId: string): void {
    this.told.delete(approvalId);
  }
}
