/**
 * A request's news in the team's hub, from admission to its end: what the hub does, and in which
 * order, when a gate asks to admit a request (quotas, a revoked key, the standing rules handed
 * out, the card shown at admission) and when it tells that a request opened, changed or ended
 * (the live feed, pushes, claims, the ladder, the quota slot, the periodic prune).
 *
 * Owns: that order across subsystems. Does not own: any table (each subsystem keeps its own:
 * `live-feed.ts`, `push-queue.ts`, `quotas.ts`, `claims.ts`, `escalation.ts`, `revocations.ts`,
 * `rules.ts`, `directory.ts`) or the platform entry points (`team-hub.ts` maps each RPC here).
 */
import type { Approval } from "../../sdk/src/approval";
import type { ApprovalNews, QuotaAsk, QuotaRefusal, QuotaVerdict } from "./api";
import type { ChannelPosts } from "./channel-posts";
import type { Claims } from "./claims";
import { DIRECTORY_MAX_AGE_MS, type Directory } from "./directory";
import type { Escalations } from "./escalation";
import { KEEP_RESOLVED_MS, type LiveFeed } from "./live-feed";
import type { PushQueue } from "./push-queue";
import type { Quotas } from "./quotas";
import type { ReceiptReports } from "./receipt-reports";
import type { Revocations } from "./revocations";
import type { StandingRules } from "./rules";
import type { Sessions } from "./sessions";

/** How often a resolution also forgets requests resolved more than KEEP_RESOLVED_MS ago. */
const PRUNE_EVERY_MS = 60_000;

/** The subsystems a request's news touches, and how to run work after the answer. */
export interface NewsParts {
  directory: Directory;
  feed: LiveFeed;
  push: PushQueue;
  quotas: Quotas;
  claims: Claims;
  escalations: Escalations;
  reports: ReceiptReports;
  channels: ChannelPosts;
  revocations: Revocations;
  rules: StandingRules;
  sessions: Pick<Sessions, "newerThan">;
  background: (work: Promise<unknown>) => void;
}

export class ApprovalNewsDesk {
  private prunedAt = 0;

  constructor(private readonly parts: NewsParts) {}

  async created(news: ApprovalNews): Promise<void> {
    const { directory, feed, push } = this.parts;
    const now = Date.now();
    // The directory first (the feed names the owner; the pushes go to its devices). Without any
    // copy (D1 down) the request is still kept.
    await directory.refresh(DIRECTORY_MAX_AGE_MS).catch((error) => {
      feed.remember(news.approval, news.ownerUserId, now);
      throw error;
    });
    // News can overtake each other: a request already resolved here is not shown or pushed any more.
    if (!feed.showNew(news.approval, news.ownerUserId, now)) return;
    // Under a ladder the gate's `escalate` pushes, step by step.
    if (news.ladder) return;
    push.queueNews(news, directory.recipients(news), now);
    await push.drain();
  }

  async resolved(approval: Approval, ownerUserId: string): Promise<void> {
    const { directory, feed, push, quotas, claims, reports, channels } = this.parts;
    // The same end again (its news, then its replayed row: gate-report.ts) changes nothing.
    if (feed.ended(approval.id)) return;
    const now = Date.now();
    quotas.release(approval.id);
    claims.end(approval.id, now);
    reports.resolved(approval.id);
    // Each channel post is marked to update now (durably, before any await); the updates go behind.
    this.parts.background(channels.ended(approval, now));
    // Remembered only once it can be shown: an end the directory failed is taken again from its row.
    await directory.load();
    if (!feed.remember(approval, ownerUserId, now)) return;
    feed.broadcastStored("resolved", approval, ownerUserId);
    push.queueResolved(approval, now);
    this.pruneSometimes(now);
    await push.drain();
  }

  async updated(approval: Approval, ownerUserId: string): Promise<void> {
    const { directory, feed } = this.parts;
    // The same change again (its news, then its replayed row: gate-report.ts) is not shown twice.
    if (feed.holds(approval) || !feed.remember(approval, ownerUserId, Date.now())) return;
    await directory.load();
    feed.broadcast("approval", approval.id);
  }

  /**
   * A request's admission: a revoked key refused, the quotas counted, the standing rules handed
   * out, and the team's newer policy when the gate's copy is older (its fan-out missed the gate).
   */
  admit(teamId: string, ask: QuotaAsk): QuotaVerdict {
    const policy = this.parts.sessions.newerThan(ask.policyVersion);
    const verdict = this.admitUnder(teamId, ask, policy === null);
    return policy ? { ...verdict, policy } : verdict;
  }

  /** `showable`: the card was drafted under the team's current policy, so it may be shown as it is. */
  private admitUnder(teamId: string, ask: QuotaAsk, showable: boolean): QuotaVerdict {
    const { directory, feed, quotas, revocations, rules, background } = this.parts;
    const now = Date.now();
    // A gate a revocation has not reached yet holds nothing new for the key.
    if (revocations.refuses(ask.keyId, now)) return { ok: false, keyRevoked: true };
    // A revocation whose call to the hub failed is read back from D1 (after the answer).
    revocations.readBackWhenDue(teamId, now);
    const verdict = quotas.admit(ask, now);
    // Shown after the answer: the agent's refusal never waits on the directory.
    if (!verdict.ok && quotas.shouldShow(ask.keyId, verdict.limit, now))
      background(this.showRefusal(ask, verdict, now));
    if (!verdict.ok) return verdict;
    // A copy not loaded or too old hands out no rules (humans decide); one due is read again after the answer.
    if (rules.refreshDue(now)) background(rules.loadSoon(teamId));
    const handed = rules.forSession(ask.ownerUserId, now);
    // With no rule that could allow it, a human decides: on the dashboards now, while the gate holds it.
    // A card drafted under an older policy (other options, risk, privacy) waits for the gate's own.
    if (showable && ask.card && handed.length === 0 && directory.current()) {
      feed.showAdmitted(ask.card, ask.ownerUserId, now);
    }
    return { ok: true, rules: handed };
  }

  released(approvalId: string): void {
    this.parts.quotas.release(approvalId);
    this.parts.feed.withdraw(approvalId, Date.now());
  }

  /**
   * Pruning is a sweep over the tables, not per-request work: at most once a minute, so a burst
   * of resolutions does not sweep once per request.
   */
  private pruneSometimes(now: number): void {
    if (now - this.prunedAt < PRUNE_EVERY_MS) return;
    this.prunedAt = now;
    this.parts.escalations.prune(now - KEEP_RESOLVED_MS);
    this.parts.push.pruneDeliveries(now - KEEP_RESOLVED_MS);
    this.parts.feed.prune(now - KEEP_RESOLVED_MS);
  }

  private async showRefusal(ask: QuotaAsk, verdict: QuotaRefusal, at: number): Promise<void> {
    await this.parts.directory.load();
    const owner = { userId: ask.ownerUserId, name: this.parts.directory.nameOf(ask.ownerUserId) };
    const { limit, retryAfterMs } = verdict;
    this.parts.feed.send({ type: "refused", refusal: { sessionId: ask.sessionId, owner, limit, retryAfterMs, at } });
  }
}
