/**
 * TeamHub: one Durable Object per team. It fans approvals out to people: the live feed that
 * browsers hold a WebSocket to, and Web Push to their devices (with retries from its alarm).
 * SessionGates tell it what happened; it never decides anything. It keeps its own copy of the
 * team's devices and roles, so the path from an agent's request to a push touches no D1.
 * It is also the one writer of the team's audit chain, and knows which sessions are live so a
 * policy change reaches them. Its one alarm serves push retries, session upkeep, the rest of
 * a policy or revocation fan-out and the refresh of its copy of the standing rules.
 *
 * Owns: the platform entry points and RPCs, each mapped to one subsystem (partyserver style).
 * Does not own: any table or rule (the subsystems, wired together in `hub-parts.ts`:
 * `approval-news.ts` (the order of a request's news), `hub-team.ts`, `directory.ts`,
 * `live-feed.ts`, `push-queue.ts`, `escalation.ts`, `sessions.ts`, `vouching.ts`,
 * `revocations.ts`, `audit-writer.ts`, `gate-report.ts`, `report-turns.ts`,
 * `../webhooks/deliveries.ts`; the schema: `migrations.ts`). Callers see `api.ts`.
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
  DeciderVouch,
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
import { devicesHealth, HEALTH_WINDOW } from "./device-health";
import { DIRECTORY_MAX_AGE_MS } from "./directory";
import { readGateReport } from "./gate-report";
import { type HubHost, hubHost } from "./host";
import { type HubParts, hubParts } from "./hub-parts";
import { HubTeam } from "./hub-team";
import { migrate } from "./migrations";
import { ReportTurns } from "./report-turns";

export class TeamHub extends DurableObject<Env> implements TeamHubApi {
  private readonly team: HubTeam;
  private readonly host: HubHost;
  private readonly parts: HubParts;
  /** Gate reports start a few per turn, so a storm of them leaves room for every other call. */
  private readonly reportTurns = new ReportTurns();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage);
    this.team = new HubTeam(ctx.storage.sql);
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    this.host = hubHost(ctx, env, () => this.team.id());
    this.parts = hubParts(
      this.host,
      (work) => ctx.waitUntil(work),
      (deviceId) => this.dropDevice(deviceId),
    );
  }

  // ── platform entry points ────────────────────────────────────────────────

  override async fetch(request: Request): Promise<Response> {
    return this.parts.feed.join(request, (teamId) => this.team.adopt(teamId));
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    // Pings are answered without waking us; pages say whether they are visible and what they showed.
    if (typeof message !== "string") return;
    const seen = this.parts.feed.message(ws, message);
    if (!seen) return;
    await this.parts.directory.load();
    this.parts.escalations.seenLive(seen.userId, seen.approvalIds, Date.now());
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    this.parts.feed.closed(ws, code, reason);
  }

  override async alarm(): Promise<void> {
    this.parts.feed.closeExpired(Date.now());
    await this.parts.audit.drainQuietly(this.team.id());
    await this.wake(Date.now());
  }

  // ── news from SessionGates ───────────────────────────────────────────────

  async approvalCreated(teamId: string, news: ApprovalNews): Promise<void> {
    this.team.adopt(teamId);
    await this.parts.news.created(news);
  }

  async approvalResolved(teamId: string, approval: Approval, ownerUserId: string): Promise<void> {
    this.team.adopt(teamId);
    await this.parts.news.resolved(approval, ownerUserId);
  }

  async approvalUpdated(teamId: string, approval: Approval, ownerUserId: string): Promise<void> {
    this.team.adopt(teamId);
    await this.parts.news.updated(approval, ownerUserId);
  }

  async sessionChanged(teamId: string, news: SessionNews): Promise<VersionedPolicy | null> {
    this.team.adopt(teamId);
    return this.parts.sessions.changed(news);
  }

  // ── quotas ───────────────────────────────────────────────────────────────

  async admitRequest(teamId: string, ask: QuotaAsk): Promise<QuotaVerdict> {
    this.team.adopt(teamId);
    return this.parts.news.admit(teamId, ask);
  }

  // ── standing rules ───────────────────────────────────────────────────────

  async rulesChanged(teamId: string): Promise<void> {
    this.team.adopt(teamId);
    await this.parts.rules.reload(teamId);
  }

  async releaseRequest(teamId: string, approvalId: string): Promise<void> {
    this.team.adopt(teamId);
    this.parts.news.released(approvalId);
  }

  /** Pending requests the quotas count now, for the team or one key (tests read it). */
  async quotaPending(keyId?: string): Promise<number> {
    return this.parts.quotas.pending(keyId);
  }

  // ── pushes and devices ───────────────────────────────────────────────────

  async markSeen(approvalId: string, deviceId: string, userId: string): Promise<boolean> {
    return this.markReceipt(approvalId, deviceId, userId, "displayed");
  }

  async markReceipt(approvalId: string, deviceId: string, userId: string, event: ReceiptEvent): Promise<boolean> {
    await this.parts.directory.load();
    return this.parts.push.markReceipt(approvalId, deviceId, userId, event, Date.now());
  }

  // ── escalation ───────────────────────────────────────────────────────────

  async escalate(teamId: string, order: EscalationOrder, now = Date.now()): Promise<EscalationOutcome> {
    this.team.adopt(teamId);
    return this.parts.escalations.run(order, now);
  }

  async timeline(approvalId: string): Promise<EscalationEvent[]> {
    return this.parts.escalations.timeline(approvalId);
  }

  async deviceHealth(userId: string): Promise<Record<string, DeviceHealth>> {
    return devicesHealth(this.parts.push.recentByDevice(userId, HEALTH_WINDOW), Date.now());
  }

  async displayReport(userId: string, now = Date.now()): Promise<DisplayReport> {
    return this.parts.push.displayReport(userId, now);
  }

  async deliveries(approvalId: string): Promise<Delivery[]> {
    return this.parts.push.deliveries(approvalId);
  }

  /** Sends what is due at `now` (the alarm's work; tests run it at a chosen moment). */
  async drain(now = Date.now()): Promise<void> {
    await this.parts.push.drain(now);
  }

  /**
   * The alarm's work at `now` (tests run it at a chosen moment): pushes due, stale sessions
   * corrected and idle ones pruned, the next part of a policy or revocation fan-out, the
   * rules' refresh, webhook messages due.
   */
  async wake(now = Date.now()): Promise<void> {
    try {
      // A push's retries go to devices in a copy at most DIRECTORY_MAX_AGE_MS old: a device
      // removed where the hub missed the notice is sent no more of them after that.
      if (this.parts.push.waiting()) await this.parts.directory.refresh(DIRECTORY_MAX_AGE_MS);
      await this.parts.push.drain(now);
    } finally {
      await Promise.all([
        this.parts.sessions.alarm(now),
        this.parts.revocations.alarm(now),
        this.parts.rules.alarm(now),
        this.parts.channels.drain(now),
        this.parts.webhooks.alarm(now),
      ]);
    }
  }

  async deviceSaved(teamId: string, device: HubDevice): Promise<void> {
    this.team.adopt(teamId);
    await this.parts.directory.load();
    this.parts.directory.saveDevice(device);
  }

  async deviceRemoved(deviceId: string): Promise<void> {
    this.parts.directory.removeDevice(deviceId);
    this.parts.push.forgetDevice(deviceId);
  }

  async sendTest(teamId: string, deviceId: string, userId: string): Promise<boolean> {
    this.team.adopt(teamId);
    await this.parts.directory.load();
    if (!this.parts.directory.isDeviceOf(deviceId, userId)) return false;
    this.parts.push.queueTest(deviceId, Date.now());
    await this.parts.push.drain();
    return true;
  }

  async forgetDirectory(): Promise<void> {
    this.parts.directory.forget();
    // A member removed or demoted holds no rules any more: none are handed out until re-read.
    this.parts.rules.forget();
    const teamId = this.team.id();
    if (teamId) this.ctx.waitUntil(this.parts.rules.loadSoon(teamId));
  }

  // ── the live feed ────────────────────────────────────────────────────────

  async closeSocketsOf(userId: string): Promise<void> {
    this.parts.feed.closeSocketsOf(userId);
  }

  async closeWebSession(tokenHash: string): Promise<void> {
    this.parts.vouching.sessionEnded(tokenHash, Date.now());
    this.parts.feed.closeWebSession(tokenHash);
  }

  async currentRole(tokenHash: string, userId: string): Promise<Role | null> {
    return this.parts.vouching.currentRole(tokenHash, userId, Date.now());
  }

  async vouchDecider(tokenHash: string, userId: string, approvalId: string): Promise<DeciderVouch> {
    const { vouching, quotas } = this.parts;
    const role = await vouching.currentRole(tokenHash, userId, Date.now());
    const keyId = quotas.keyOf(approvalId);
    return { role, key: keyId === null ? null : { keyId, revoked: vouching.revokedLately(keyId, Date.now()) } };
  }

  async keyRevoked(teamId: string, keyId: string, sessionIds: string[]): Promise<KeyRevocation> {
    this.team.adopt(teamId);
    return this.parts.revocations.revoked(keyId, sessionIds, Date.now());
  }

  async keyInUse(keyId: string, userId: string): Promise<boolean> {
    return this.parts.vouching.keyInUse(keyId, userId, Date.now());
  }

  async keyRevokedLately(keyId: string): Promise<boolean> {
    return this.parts.vouching.revokedLately(keyId, Date.now());
  }

  /** Closes the live sockets whose web session expired by `now` (also before every event; tests pick `now`). */
  closeExpired(now = Date.now()): void {
    this.parts.feed.closeExpired(now);
  }

  // ── claims ("Ada is looking") ────────────────────────────────────────────

  async claim(teamId: string, approval: Approval, by: Owner): Promise<ClaimResult> {
    this.team.adopt(teamId);
    const result = this.parts.claims.claim(approval, by, Date.now());
    if (!result.ok) return result;
    this.parts.feed.send({ type: "claimed", ...result.claim });
    // The agent's progress says who is looking (`claimedBy`).
    this.parts.reports.report(approval.id);
    return result;
  }

  async claimOf(approvalId: string, now = Date.now()): Promise<Claim | null> {
    return this.parts.claims.of(approvalId, now);
  }

  // ── sessions and policy ──────────────────────────────────────────────────

  async deadLettered(teamId: string): Promise<DeadLetteredSession[]> {
    this.team.adopt(teamId);
    return this.parts.sessions.deadLettered();
  }

  async policy(teamId: string): Promise<VersionedPolicy> {
    this.team.adopt(teamId);
    return this.parts.sessions.policy(teamId);
  }

  async policyChanged(): Promise<void> {
    await this.parts.sessions.policyChanged();
  }

  // ── the audit chain ──────────────────────────────────────────────────────

  async appendAudit(events: AuditEvent[]): Promise<void> {
    const first = events[0]?.teamId;
    if (first) await this.chain(first, events, []);
  }

  async gateReport(teamId: string, report: GateReport): Promise<GateReportAnswer> {
    await this.reportTurns.take();
    // A connected session reports at least every 10 min: a revocation the hub missed is read back.
    this.parts.revocations.readBackWhenDue(teamId, Date.now());
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
    await this.parts.audit.append(this.team.id() as string, events, index);
    await this.parts.audit.drainSometimes(this.team.id());
  }

  /** Messages may wait in the webhook queue (the hourly sweep, a test): send what is due from the alarm. */
  async webhooksDue(teamId: string): Promise<void> {
    this.team.adopt(teamId);
    await this.parts.webhooks.due(Date.now());
  }

  async drainAudit(teamId: string): Promise<void> {
    this.team.adopt(teamId);
    await this.parts.audit.drain(teamId);
  }

  async auditAnchors(teamId: string): Promise<AuditAnchors> {
    this.team.adopt(teamId);
    await this.parts.audit.drainQuietly(this.team.id());
    return this.parts.audit.anchors(teamId);
  }

  // ── devices the push service dropped ─────────────────────────────────────

  /** The push service says the subscription is gone (404/410): forget the device everywhere. */
  private async dropDevice(deviceId: string): Promise<void> {
    await this.deviceRemoved(deviceId);
    const teamId = this.team.id();
    if (teamId) await deleteDevice(this.env.DB, teamId, deviceId);
  }
}
