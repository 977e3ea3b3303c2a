/**
 * TeamHub: one Durable Object per team. It fans approvals out to people: the live feed that
 * browsers hold a WebSocket to, and Web Push to their devices (with retries from its alarm).
 * SessionGates tell it what happened; it never decides anything. It keeps its own copy of the
 * team's devices and roles, so the path from an agent's request to a push touches no D1.
 * It is also the one writer of the team's audit chain, and knows which sessions are live so a
 * policy change reaches them. Its one alarm serves push retries, session upkeep, the rest of
 * a policy or revocation fan-out and the refresh of its copy of the standing rules.
 *
 * Owns: the platform entry points, each mapped to one subsystem (partyserver style). Does not own: any table or rule (the
 * subsystems: `approval-news.ts` (the order of a request's news), `hub-team.ts`, `directory.ts`, `live-feed.ts`, `push-queue.ts`, `escalation.ts`,
 * `sessions.ts`, `vouching.ts`, `revocations.ts`, `audit-writer.ts`, `gate-report.ts`, `report-turns.ts`; the
 * schema: `migrations.ts`). Callers see `api.ts`.
 */
import { DurableObject } from "cloudflare:workers";
import type { Approval, Delivery, EscalationEvent, Owner } from "../../sdk/src/approval";
import type { Claim } from "../../sdk/src/human/approvals";
import type { Role } from "../../sdk/src/human/roles";
import { type D1OutboxOp, deleteDevice } from "../db";
import type { VersionedPolicy } from "../policy";
import type { Env } from "../types";
import type {
  ApprovalNews,
  AuditAnchors,
  AuditEvent,
  ClaimResult,
  DeadLetteredSession,
  DeviceHealth,
  DisplayReport,
  EscalationOrder,
  EscalationOutcome,
  GateReport,
  GateReportAnswer,
  HubDevice,
  KeyRevocation,
  OutboxOp,
  QuotaAsk,
  QuotaVerdict,
  ReceiptEvent,
  SessionNews,
  TeamHubApi,
} from "./api";
import { ApprovalNewsDesk } from "./approval-news";
import { AuditWriter } from "./audit-writer";
import { ChannelPosts } from "./channel-posts";
import { Claims } from "./claims";
import { devicesHealth, HEALTH_WINDOW } from "./device-health";
import { Directory } from "./directory";
import { Escalations } from "./escalation";
import { readGateReport } from "./gate-report";
import { type HubHost, hubHost } from "./host";
import { HubTeam } from "./hub-team";
import { LiveFeed } from "./live-feed";
import { migrate } from "./migrations";
import { PushBudget } from "./push-budget";
import { PushQueue } from "./push-queue";
import { Quotas } from "./quotas";
import { ReportTurns } from "./report-turns";
import { Revocations } from "./revocations";
import { StandingRules } from "./rules";
import { Sessions } from "./sessions";
import { Vouching } from "./vouching";

export class TeamHub extends DurableObject<Env> implements TeamHubApi {
  private readonly team: HubTeam;
  private readonly host: HubHost;
  private readonly directory: Directory;
  private readonly feed: LiveFeed;
  private readonly push: PushQueue;
  private readonly sessions: Sessions;
  private readonly vouching: Vouching;
  private readonly revocations: Revocations;
  private readonly audit: AuditWriter;
  private readonly quotas: Quotas;
  private readonly rules: StandingRules;
  private readonly escalations: Escalations;
  private readonly channels: ChannelPosts;
  private readonly claims: Claims;
  private readonly news: ApprovalNewsDesk;
  /** Gate reports start a few per turn, so a storm of them leaves room for every other call. */
  private readonly reportTurns = new ReportTurns();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage);
    this.team = new HubTeam(ctx.storage.sql);
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    this.host = hubHost(ctx, env, () => this.team.id());
    this.directory = new Directory(this.host);
    this.push = new PushQueue(this.host, this.directory, {
      onDelivery: (approvalId) => {
        this.feed.broadcast("approval", approvalId);
        this.escalations.report(approvalId);
      },
      onGone: (deviceId) => this.dropDevice(deviceId),
    });
    this.claims = new Claims(this.host);
    this.feed = new LiveFeed(
      this.host,
      (approvalId) => this.push.deliveries(approvalId),
      (approvalId) => this.escalations.timeline(approvalId),
      (now) => this.claims.all(now),
    );
    this.channels = new ChannelPosts(this.host, this.directory, new PushBudget(this.host), (approvalId) => {
      this.feed.broadcast("approval", approvalId);
      this.escalations.report(approvalId);
    });
    this.escalations = new Escalations(
      this.host,
      this.directory,
      this.feed,
      this.push,
      { background: (work) => ctx.waitUntil(work), claimOf: (approvalId) => this.claims.of(approvalId, Date.now()) },
      this.channels,
    );
    this.sessions = new Sessions(this.host, this.directory, this.feed);
    this.vouching = new Vouching(this.host, this.directory);
    this.revocations = new Revocations(this.host, this.vouching);
    this.audit = new AuditWriter(this.host);
    this.quotas = new Quotas(this.host);
    this.rules = new StandingRules(this.host);
    this.news = new ApprovalNewsDesk({
      ...{ directory: this.directory, feed: this.feed, push: this.push, quotas: this.quotas, claims: this.claims },
      ...{ escalations: this.escalations, channels: this.channels, revocations: this.revocations, rules: this.rules },
      background: (work) => ctx.waitUntil(work),
    });
  }

  // ── platform entry points ────────────────────────────────────────────────

  override async fetch(request: Request): Promise<Response> {
    return this.feed.join(request, (teamId) => this.team.adopt(teamId));
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    // Pings are answered without waking us; pages say whether they are visible and what they showed.
    if (typeof message !== "string") return;
    const seen = this.feed.message(ws, message);
    if (!seen) return;
    await this.directory.load();
    this.escalations.seenLive(seen.userId, seen.approvalIds, Date.now());
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    this.feed.closed(ws, code, reason);
  }

  override async alarm(): Promise<void> {
    this.feed.closeExpired(Date.now());
    await this.audit.drainQuietly(this.team.id());
    await this.wake(Date.now());
  }

  // ── news from SessionGates ───────────────────────────────────────────────

  async approvalCreated(teamId: string, news: ApprovalNews): Promise<void> {
    this.team.adopt(teamId);
    await this.news.created(news);
  }

  async approvalResolved(teamId: string, approval: Approval, ownerUserId: string): Promise<void> {
    this.team.adopt(teamId);
    await this.news.resolved(approval, ownerUserId);
  }

  async approvalUpdated(teamId: string, approval: Approval, ownerUserId: string): Promise<void> {
    this.team.adopt(teamId);
    await this.news.updated(approval, ownerUserId);
  }

  async sessionChanged(teamId: string, news: SessionNews): Promise<VersionedPolicy | null> {
    this.team.adopt(teamId);
    return this.sessions.changed(news);
  }

  // ── quotas ───────────────────────────────────────────────────────────────

  async admitRequest(teamId: string, ask: QuotaAsk): Promise<QuotaVerdict> {
    this.team.adopt(teamId);
    return this.news.admit(teamId, ask);
  }

  // ── standing rules ───────────────────────────────────────────────────────

  async rulesChanged(teamId: string): Promise<void> {
    this.team.adopt(teamId);
    await this.rules.reload(teamId);
  }

  async releaseRequest(teamId: string, approvalId: string): Promise<void> {
    this.team.adopt(teamId);
    this.news.released(approvalId);
  }

  /** Pending requests the quotas count now, for the team or one key (tests read it). */
  async quotaPending(keyId?: string): Promise<number> {
    return this.quotas.pending(keyId);
  }

  // ── pushes and devices ───────────────────────────────────────────────────

  async markSeen(approvalId: string, deviceId: string, userId: string): Promise<boolean> {
    return this.markReceipt(approvalId, deviceId, userId, "displayed");
  }

  async markReceipt(approvalId: string, deviceId: string, userId: string, event: ReceiptEvent): Promise<boolean> {
    await this.directory.load();
    return this.push.markReceipt(approvalId, deviceId, userId, event, Date.now());
  }

  // ── escalation ───────────────────────────────────────────────────────────

  async escalate(teamId: string, order: EscalationOrder, now = Date.now()): Promise<EscalationOutcome> {
    this.team.adopt(teamId);
    return this.escalations.run(order, now);
  }

  async timeline(approvalId: string): Promise<EscalationEvent[]> {
    return this.escalations.timeline(approvalId);
  }

  async deviceHealth(userId: string): Promise<Record<string, DeviceHealth>> {
    return devicesHealth(this.push.recentByDevice(userId, HEALTH_WINDOW), Date.now());
  }

  async displayReport(userId: string, now = Date.now()): Promise<DisplayReport> {
    return this.push.displayReport(userId, now);
  }

  async deliveries(approvalId: string): Promise<Delivery[]> {
    return this.push.deliveries(approvalId);
  }

  /** Sends what is due at `now` (the alarm's work; tests run it at a chosen moment). */
  async drain(now = Date.now()): Promise<void> {
    await this.push.drain(now);
  }

  /**
   * The alarm's work at `now` (tests run it at a chosen moment): pushes due, stale sessions
   * corrected and idle ones pruned, the next part of a policy or revocation fan-out, the
   * rules' refresh.
   */
  async wake(now = Date.now()): Promise<void> {
    try {
      await this.push.drain(now);
    } finally {
      await Promise.all([
        this.sessions.alarm(now),
        this.revocations.alarm(now),
        this.rules.alarm(now),
        this.channels.drain(now),
      ]);
    }
  }

  async deviceSaved(teamId: string, device: HubDevice): Promise<void> {
    this.team.adopt(teamId);
    await this.directory.load();
    this.directory.saveDevice(device);
  }

  async deviceRemoved(deviceId: string): Promise<void> {
    this.directory.removeDevice(deviceId);
    this.push.forgetDevice(deviceId);
  }

  async sendTest(teamId: string, deviceId: string, userId: string): Promise<boolean> {
    this.team.adopt(teamId);
    await this.directory.load();
    if (!this.directory.isDeviceOf(deviceId, userId)) return false;
    this.push.queueTest(deviceId, Date.now());
    await this.push.drain();
    return true;
  }

  async forgetDirectory(): Promise<void> {
    this.directory.forget();
    // A member removed or demoted holds no rules any more: none are handed out until re-read.
    this.rules.forget();
    const teamId = this.team.id();
    if (teamId) this.ctx.waitUntil(this.rules.loadSoon(teamId));
  }

  // ── the live feed ────────────────────────────────────────────────────────

  async closeSocketsOf(userId: string): Promise<void> {
    this.feed.closeSocketsOf(userId);
  }

  async closeWebSession(tokenHash: string): Promise<void> {
    this.vouching.sessionEnded(tokenHash, Date.now());
    this.feed.closeWebSession(tokenHash);
  }

  async currentRole(tokenHash: string, userId: string): Promise<Role | null> {
    return this.vouching.currentRole(tokenHash, userId, Date.now());
  }

  async keyRevoked(teamId: string, keyId: string, sessionIds: string[]): Promise<KeyRevocation> {
    this.team.adopt(teamId);
    return this.revocations.revoked(keyId, sessionIds, Date.now());
  }

  async keyInUse(keyId: string, userId: string): Promise<boolean> {
    return this.vouching.keyInUse(keyId, userId, Date.now());
  }

  /** Closes the live sockets whose web session expired by `now` (also before every event; tests pick `now`). */
  closeExpired(now = Date.now()): void {
    this.feed.closeExpired(now);
  }

  // ── claims ("Ada is looking") ────────────────────────────────────────────

  async claim(teamId: string, approval: Approval, by: Owner): Promise<ClaimResult> {
    this.team.adopt(teamId);
    const result = this.claims.claim(approval, by, Date.now());
    if (!result.ok) return result;
    this.feed.send({ type: "claimed", ...result.claim });
    // The agent's progress says who is looking (`claimedBy`).
    this.escalations.report(approval.id);
    return result;
  }

  async claimOf(approvalId: string, now = Date.now()): Promise<Claim | null> {
    return this.claims.of(approvalId, now);
  }

  // ── sessions and policy ──────────────────────────────────────────────────

  async deadLettered(teamId: string): Promise<DeadLetteredSession[]> {
    this.team.adopt(teamId);
    return this.sessions.deadLettered();
  }

  async policy(teamId: string): Promise<VersionedPolicy> {
    this.team.adopt(teamId);
    return this.sessions.policy(teamId);
  }

  async policyChanged(): Promise<void> {
    await this.sessions.policyChanged();
  }

  // ── the audit chain ──────────────────────────────────────────────────────

  async appendAudit(events: AuditEvent[]): Promise<void> {
    const first = events[0]?.teamId;
    if (first) await this.chain(first, events, []);
  }

  async gateReport(teamId: string, report: GateReport): Promise<GateReportAnswer> {
    await this.reportTurns.take();
    return readGateReport(this, teamId, report, (work) => this.ctx.waitUntil(work));
  }

  async writeOutbox(teamId: string, ops: OutboxOp[]): Promise<void> {
    const events = ops.flatMap(({ op, ...e }) => (op === "audit" ? [e as AuditEvent] : []));
    const index = ops.filter((o): o is D1OutboxOp => o.op !== "audit");
    await this.chain(teamId, events, index);
  }

  /** Appends to the chain of the hub's team (with the gates' index rows), then drains what the routes queued, now and then. */
  private async chain(teamId: string, events: AuditEvent[], index: D1OutboxOp[]): Promise<void> {
    this.team.adopt(teamId);
    await this.audit.append(this.team.id() as string, events, index);
    await this.audit.drainSometimes(this.team.id());
  }

  async drainAudit(teamId: string): Promise<void> {
    this.team.adopt(teamId);
    await this.audit.drain(teamId);
  }

  async auditAnchors(teamId: string): Promise<AuditAnchors> {
    this.team.adopt(teamId);
    await this.audit.drainQuietly(this.team.id());
    return this.audit.anchors(teamId);
  }

  // ── devices the push service dropped ─────────────────────────────────────

  /** The push service says the subscription is gone (404/410): forget the device everywhere. */
  private async dropDevice(deviceId: string): Promise<void> {
    await this.deviceRemoved(deviceId);
    const teamId = this.team.id();
    if (teamId) await deleteDevice(this.env.DB, teamId, deviceId);
  }
}
