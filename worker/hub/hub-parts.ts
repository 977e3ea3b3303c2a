/**
 * The hub's subsystems and how they hear of one another, built once per object for the shell
 * (`team-hub.ts`), which maps each platform entry point and RPC to one of them.
 *
 * Owns: the wiring (who tells whom about a delivery, a timeline, a claim). Does not own: any
 * table, rule or entry point (the subsystems and the shell).
 */
import { WebhookDeliveries } from "../webhooks/deliveries";
import { ApprovalNewsDesk } from "./approval-news";
import { AuditWriter } from "./audit-writer";
import { ChannelPosts } from "./channel-posts";
import { Claims } from "./claims";
import { Directory } from "./directory";
import { Escalations } from "./escalation";
import type { HubHost } from "./host";
import { LiveFeed } from "./live-feed";
import { PushBudget } from "./push-budget";
import { PushQueue } from "./push-queue";
import { Quotas } from "./quotas";
import { ReceiptReports } from "./receipt-reports";
import { Revocations } from "./revocations";
import { StandingRules } from "./rules";
import { Sessions } from "./sessions";
import { Vouching } from "./vouching";

export interface HubParts {
  directory: Directory;
  feed: LiveFeed;
  push: PushQueue;
  sessions: Sessions;
  vouching: Vouching;
  revocations: Revocations;
  audit: AuditWriter;
  webhooks: WebhookDeliveries;
  quotas: Quotas;
  rules: StandingRules;
  escalations: Escalations;
  reports: ReceiptReports;
  channels: ChannelPosts;
  claims: Claims;
  news: ApprovalNewsDesk;
}

/** `background` keeps work alive past the call (`ctx.waitUntil`); `onGone` forgets a device the push service dropped. */
export function hubParts(
  host: HubHost,
  background: (work: Promise<unknown>) => void,
  onGone: (deviceId: string) => Promise<void>,
): HubParts {
  // A push or a channel post reached someone: the card shows it and the ladder hears of it.
  const delivered = (approvalId: string) => {
    feed.broadcast("approval", approvalId);
    reports.report(approvalId);
  };
  const directory = new Directory(host);
  const push = new PushQueue(host, directory, { onDelivery: delivered, onGone });
  const claims = new Claims(host);
  const feed: LiveFeed = new LiveFeed(
    host,
    (approvalId) => push.deliveries(approvalId),
    (approvalId) => escalations.timeline(approvalId),
    (now) => claims.all(now),
  );
  const channels = new ChannelPosts(host, directory, new PushBudget(host), delivered);
  const claimOf = (approvalId: string) => claims.of(approvalId, Date.now());
  const reports = new ReceiptReports(host, directory, push, channels, { background, claimOf });
  const escalations = new Escalations(host, directory, feed, push, channels, reports);
  const sessions = new Sessions(host, directory, feed);
  const vouching = new Vouching(host, directory);
  const revocations = new Revocations(host, vouching, background);
  const webhooks = new WebhookDeliveries(host);
  const audit = new AuditWriter(host, {
    statement: (teamId, entries) => webhooks.queueStatement(teamId, entries),
    written: (rows) => webhooks.queued(rows),
  });
  const quotas = new Quotas(host);
  const rules = new StandingRules(host);
  const news = new ApprovalNewsDesk({
    directory,
    feed,
    push,
    quotas,
    claims,
    escalations,
    reports,
    channels,
    revocations,
    rules,
    sessions,
    background,
  });
  return {
    directory,
    feed,
    push,
    sessions,
    vouching,
    revocations,
    audit,
    webhooks,
    quotas,
    rules,
    escalations,
    reports,
    channels,
    claims,
    news,
  };
}
