/**
 * TeamHub: one Durable Object per team. It fans approvals out to people: the live feed that
 * browsers hold a WebSocket to, and Web Push to their devices (with retries from its alarm).
 * SessionGates tell it what happened; it never decides anything. It keeps its own copy of the
 * team's devices and roles, so the path from an agent's request to a push touches no D1.
 * It is also the one writer of the team's audit chain, and knows which sessions are connected
 * so a policy change reaches them.
 */
import { DurableObject } from "cloudflare:workers";
import type { AgentSession, Approval, Delivery } from "../sdk/src/approval";
import type { LiveApproval, LiveEvent } from "../sdk/src/human/live";
import { type AuditEvent, chainEvents } from "./audit-chain";
import {
  deleteDevice,
  insertAuditEntries,
  lastAuditHash,
  listTeamDirectory,
  type VersionedPolicy,
  writtenEventIds,
} from "./db";
import { closeQuietly, objectUpgrade, reciprocateClose, upgradeIdentity } from "./object-sockets";
import { type PushPayload, type PushSubscription, pushTopic, sendPush, type VapidKeys } from "./push";
import { DECIDER_ROLES } from "./roles";
import type { Env, SessionInfo } from "./types";

/** Who opened a live-feed socket: set by the Worker after it checked the cookie and Origin. */
export interface HubJoin {
  teamId: string;
  userId: string;
  /** The web session the socket belongs to, so signing out (or switching team) ends it. */
  tokenHash: string;
}

export interface HubDevice {
  id: string;
  userId: string;
  name: string;
  endpoint: string;
  p256dh: string;
  auth: string;
}

/** What a SessionGate reports about a new request. */
export interface ApprovalNews {
  approval: Approval;
  ownerUserId: string;
  recipients: "session_owner" | "all_approvers";
  lockScreen: "tool_title" | "generic";
  /** "approval": push this request · "summary": fatigue limit reached, one summary · "none". */
  push: { kind: "approval" } | { kind: "summary"; waiting: number } | { kind: "none" };
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
}

export type { LiveApproval, LiveEvent };

const JOIN_HEADER = "x-tapgate-hub-join";
const RETRY_BASE_MS = 1_000;
/** Longer than a push request may take (10 s timeout), so a claimed job is never sent twice. */
const SEND_CLAIM_MS = 30_000;
const RETRY_MAX_MS = 60_000;
const RESOLVED_TTL_S = 24 * 60 * 60;
const KEEP_RESOLVED_MS = 24 * 60 * 60 * 1000;
/** Attempts at appending when the chain head moved under us (another writer, a stale head). */
const AUDIT_ATTEMPTS = 3;
/** D1 binds at most 100 parameters per statement; replay checks go in pages of this size. */
const EVENT_ID_PAGE = 90;

export function hubJoinRequest(request: Request, join: HubJoin): Request {
  return objectUpgrade(request, JOIN_HEADER, join);
}

export const hubFor = (env: Env, teamId: string) => env.TEAM_HUB.get(env.TEAM_HUB.idFromName(teamId));

export class TeamHub extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS devices (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL,
        endpoint TEXT NOT NULL, p256dh TEXT NOT NULL, auth TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS members (user_id TEXT PRIMARY KEY, role TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS approvals (id TEXT PRIMARY KEY, owner_user_id TEXT NOT NULL, state TEXT NOT NULL,
        expires_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, record TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS deliveries (approval_id TEXT NOT NULL, device_id TEXT NOT NULL, user_id TEXT NOT NULL,
        device_name TEXT NOT NULL, sent_at INTEGER, delivered_at INTEGER, seen_at INTEGER, failed_at INTEGER,
        PRIMARY KEY (approval_id, device_id));
      CREATE TABLE IF NOT EXISTS push_queue (seq INTEGER PRIMARY KEY AUTOINCREMENT, device_id TEXT NOT NULL,
        approval_id TEXT, payload TEXT NOT NULL, urgency TEXT NOT NULL, expires_at INTEGER NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0, next_at INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS people (user_id TEXT PRIMARY KEY, name TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS sessions (session_id TEXT PRIMARY KEY, owner_user_id TEXT NOT NULL,
        info TEXT NOT NULL, connected INTEGER NOT NULL, connected_at INTEGER, disconnected_at INTEGER,
        last_seen_at INTEGER NOT NULL, pending INTEGER NOT NULL);
    `);
  }

  // ── the live feed ────────────────────────────────────────────────────────

  override async fetch(request: Request): Promise<Response> {
    const join = upgradeIdentity<HubJoin>(request, JOIN_HEADER);
    if (!join) return new Response("expected a WebSocket upgrade from the Worker", { status: 400 });
    this.adopt(join.teamId);
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server, [`user:${join.userId}`, `web:${join.tokenHash}`]);
    server.serializeAttachment(join);
    return new Response(null, { status: 101, webSocket: client });
  }

  override async webSocketMessage(): Promise<void> {
    // The feed is one-way; browsers only ping, and pings are answered without waking us.
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    reciprocateClose(ws, code, reason);
  }

  /** Ends a member's live sockets (sign-out everywhere, removal from the team). */
  async closeSocketsOf(userId: string): Promise<void> {
    this.closeTagged(`user:${userId}`);
  }

  /** Ends the live sockets of one web session: signed out, or moved to another team. */
  async closeWebSession(tokenHash: string): Promise<void> {
    this.closeTagged(`web:${tokenHash}`);
  }

  private closeTagged(tag: string): void {
    for (const ws of this.ctx.getWebSockets(tag)) closeQuietly(ws, 4003, "signed out");
  }

  private broadcast(type: "approval" | "resolved", approvalId: string): void {
    const approval = this.liveApproval(approvalId);
    if (approval) this.send({ type, approval });
  }

  private send(event: LiveEvent): void {
    const frame = JSON.stringify(event);
    for (const ws of this.ctx.getWebSockets()) {
      try {
        ws.send(frame);
      } catch {
        // Closing sockets are cleaned up by their close handler.
      }
    }
  }

  private liveApproval(approvalId: string): LiveApproval | null {
    const row = this.sql
      .exec(
        "SELECT a.owner_user_id, a.record, p.name FROM approvals a LEFT JOIN people p ON p.user_id = a.owner_user_id WHERE a.id = ?",
        approvalId,
      )
      .toArray()[0];
    if (!row) return null;
    const approval = JSON.parse(row.record as string) as Approval;
    const owner = { userId: row.owner_user_id as string, name: (row.name as string | null) ?? "" };
    return { ...approval, owner, delivery: this.deliveries(approvalId) };
  }

  // ── news from SessionGates ───────────────────────────────────────────────

  async approvalCreated(teamId: string, news: ApprovalNews): Promise<void> {
    this.adopt(teamId);
    const now = Date.now();
    // News can overtake each other: a request already resolved here is not pushed any more.
    if (!this.remember(news.approval, news.ownerUserId, now)) return;
    // The directory first: the feed names the owner.
    await this.loadDirectory();
    this.broadcast("approval", news.approval.id);
    const devices = this.recipients(news);
    if (news.push.kind === "approval") {
      const payload: PushPayload = {
        v: 1,
        type: "approval",
        approvalId: news.approval.id,
        title: lockScreenTitle(news.approval, news.lockScreen),
        expiresAt: news.approval.expiresAt,
      };
      for (const device of devices) {
        // At most one push per request per device, whatever the retries and replays.
        const fresh = this.sql
          .exec(
            `INSERT INTO deliveries (approval_id, device_id, user_id, device_name) VALUES (?, ?, ?, ?)
             ON CONFLICT DO NOTHING RETURNING device_id`,
            news.approval.id,
            device.id,
            device.userId,
            device.name,
          )
          .toArray();
        if (fresh.length > 0) this.enqueue(device.id, news.approval.id, payload, "high", news.approval.expiresAt, now);
      }
    }
    if (news.push.kind === "summary") {
      const payload: PushPayload = { v: 1, type: "summary", count: news.push.waiting };
      for (const device of devices) this.enqueue(device.id, null, payload, "normal", news.approval.expiresAt, now);
    }
    await this.drain();
  }

  async approvalResolved(teamId: string, approval: Approval, ownerUserId: string): Promise<void> {
    this.adopt(teamId);
    const now = Date.now();
    if (!this.remember(approval, ownerUserId, now)) return;
    await this.loadDirectory();
    this.broadcast("resolved", approval.id);
    // Nothing left to ask: drop its unsent pushes, and close the notification where one went out.
    this.sql.exec("DELETE FROM push_queue WHERE approval_id = ?", approval.id);
    const pushed = this.sql
      .exec("SELECT device_id FROM deliveries WHERE approval_id = ? AND sent_at IS NOT NULL", approval.id)
      .toArray();
    const payload: PushPayload = { v: 1, type: "resolved", approvalId: approval.id, state: approval.state };
    for (const row of pushed)
      this.enqueue(row.device_id as string, null, payload, "normal", now + RESOLVED_TTL_S * 1000, now);
    this.prune(now);
    await this.drain();
  }

  /** The service worker saw the push on this device. */
  async markSeen(approvalId: string, deviceId: string, userId: string): Promise<boolean> {
    const updated = this.sql
      .exec(
        `UPDATE deliveries SET seen_at = COALESCE(seen_at, ?) WHERE approval_id = ? AND device_id = ? AND user_id = ?
         RETURNING device_id`,
        Date.now(),
        approvalId,
        deviceId,
        userId,
      )
      .toArray();
    if (updated.length > 0) this.broadcast("approval", approvalId);
    return updated.length > 0;
  }

  deliveries(approvalId: string): Delivery[] {
    return this.sql
      .exec(
        `SELECT device_id AS deviceId, device_name AS deviceName, user_id AS userId, sent_at AS sentAt,
                delivered_at AS deliveredAt, seen_at AS seenAt, failed_at AS failedAt
           FROM deliveries WHERE approval_id = ? ORDER BY device_name`,
        approvalId,
      )
      .toArray() as unknown as Delivery[];
  }

  // ── devices ──────────────────────────────────────────────────────────────

  async deviceSaved(teamId: string, device: HubDevice): Promise<void> {
    this.adopt(teamId);
    await this.loadDirectory();
    this.sql.exec(
      "INSERT OR REPLACE INTO devices (id, user_id, name, endpoint, p256dh, auth) VALUES (?, ?, ?, ?, ?, ?)",
      device.id,
      device.userId,
      device.name,
      device.endpoint,
      device.p256dh,
      device.auth,
    );
  }

  async deviceRemoved(deviceId: string): Promise<void> {
    this.sql.exec("DELETE FROM devices WHERE id = ?", deviceId);
    this.sql.exec("DELETE FROM push_queue WHERE device_id = ?", deviceId);
  }

  async sendTest(teamId: string, deviceId: string, userId: string): Promise<boolean> {
    this.adopt(teamId);
    await this.loadDirectory();
    const mine = this.sql.exec("SELECT 1 FROM devices WHERE id = ? AND user_id = ?", deviceId, userId).toArray();
    if (mine.length === 0) return false;
    const now = Date.now();
    this.enqueue(deviceId, null, { v: 1, type: "test" }, "normal", now + 60_000, now);
    await this.drain();
    return true;
  }

  /** Members or roles changed: read them again from D1 on next use. */
  async forgetDirectory(): Promise<void> {
    this.sql.exec("DELETE FROM meta WHERE k = 'directory'");
  }

  private async loadDirectory(): Promise<void> {
    if (this.sql.exec("SELECT 1 FROM meta WHERE k = 'directory'").toArray().length > 0) return;
    const teamId = this.teamId();
    if (!teamId) return;
    const { devices, members } = await listTeamDirectory(this.env.DB, teamId);
    this.sql.exec("DELETE FROM devices");
    this.sql.exec("DELETE FROM members");
    for (const d of devices) {
      this.sql.exec(
        "INSERT INTO devices (id, user_id, name, endpoint, p256dh, auth) VALUES (?, ?, ?, ?, ?, ?)",
        d.id,
        d.userId,
        d.name,
        d.endpoint,
        d.p256dh,
        d.auth,
      );
    }
    this.sql.exec("DELETE FROM people");
    for (const m of members) {
      this.sql.exec("INSERT INTO members (user_id, role) VALUES (?, ?)", m.userId, m.role);
      this.sql.exec("INSERT INTO people (user_id, name) VALUES (?, ?)", m.userId, m.name);
    }
    this.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('directory', '1')");
  }

  // ── sessions and policy ──────────────────────────────────────────────────

  /**
   * A session connected, disconnected or changed its metadata: shown live when something
   * changed. Answers the team's policy when the hub knows a newer one than the gate's (a change
   * that raced the gate's join), so the gate takes it up.
   */
  async sessionChanged(teamId: string, news: SessionNews): Promise<VersionedPolicy | null> {
    this.adopt(teamId);
    const before = this.sql.exec("SELECT * FROM sessions WHERE session_id = ?", news.sessionId).toArray()[0];
    const wasConnected = before?.connected === 1;
    const connectedAt = news.connected && !wasConnected ? news.at : ((before?.connected_at as number | null) ?? null);
    const disconnectedAt = news.connected
      ? null
      : wasConnected
        ? news.at
        : ((before?.disconnected_at as number) ?? news.at);
    const info = JSON.stringify(news.info);
    const changed =
      !before || wasConnected !== news.connected || before.info !== info || before.pending !== news.pending;
    this.sql.exec(
      `INSERT OR REPLACE INTO sessions (session_id, owner_user_id, info, connected, connected_at, disconnected_at,
         last_seen_at, pending) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      news.sessionId,
      news.ownerUserId,
      info,
      news.connected ? 1 : 0,
      connectedAt,
      disconnectedAt,
      news.at,
      news.pending,
    );
    if (changed) {
      await this.loadDirectory();
      this.send({ type: "session", session: this.liveSession(news.sessionId) as AgentSession });
    }
    const policy = this.policy();
    return news.connected && policy && policy.version > news.policyVersion ? policy : null;
  }

  /** The policy changed (already in D1): returns the connected sessions, which the caller updates. */
  async policyChanged(teamId: string, policy: VersionedPolicy): Promise<string[]> {
    this.adopt(teamId);
    const known = this.policy();
    if (!known || known.version < policy.version) {
      this.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('policy', ?)", JSON.stringify(policy));
    }
    return this.sql
      .exec("SELECT session_id FROM sessions WHERE connected = 1")
      .toArray()
      .map((r) => r.session_id as string);
  }

  private policy(): VersionedPolicy | null {
    const row = this.sql.exec("SELECT v FROM meta WHERE k = 'policy'").toArray()[0];
    return row ? (JSON.parse(row.v as string) as VersionedPolicy) : null;
  }

  private liveSession(sessionId: string): AgentSession | null {
    const row = this.sql
      .exec(
        "SELECT s.*, p.name FROM sessions s LEFT JOIN people p ON p.user_id = s.owner_user_id WHERE session_id = ?",
        sessionId,
      )
      .toArray()[0];
    if (!row) return null;
    const info = JSON.parse(row.info as string) as SessionInfo;
    return {
      sessionId,
      owner: { userId: row.owner_user_id as string, name: (row.name as string | null) ?? "" },
      ...info,
      connectedAt: row.connected_at as number | null,
      disconnectedAt: row.disconnected_at as number | null,
      lastSeenAt: row.last_seen_at as number,
      pending: row.pending as number,
    };
  }

  // ── the audit chain ──────────────────────────────────────────────────────

  private auditTail: Promise<unknown> = Promise.resolve();

  /**
   * Appends events to the team's audit chain, in order; an event id already in the log is
   * skipped, so a replay never advances or forks the chain. Appends run one at a time (the D1
   * writes would otherwise interleave across awaits), and each insert is a compare-and-swap on
   * the chain head in D1, so even a stale head here cannot fork it: it is re-read and retried.
   * Resolves once D1 has every event.
   */
  async appendAudit(events: AuditEvent[]): Promise<void> {
    const teamId = events[0]?.teamId;
    if (!teamId) return;
    this.adopt(teamId);
    if (events.some((e) => e.teamId !== this.teamId())) throw new Error("audit events of another team");
    const run = this.auditTail.then(() => this.writeAudit(teamId, events));
    this.auditTail = run.catch(() => undefined);
    await run;
  }

  private async writeAudit(teamId: string, events: AuditEvent[]): Promise<void> {
    let todo = [...new Map(events.map((e) => [e.eventId, e])).values()];
    let head = this.auditHead();
    for (let attempt = 0; attempt < AUDIT_ATTEMPTS; attempt++) {
      if (head === null) {
        // First use, a restart mid-write, or a lost race: D1 is the record of where the chain is.
        head = await lastAuditHash(this.env.DB, teamId);
        todo = await this.unwritten(todo);
      }
      if (todo.length === 0) return this.saveAuditHead(head);
      const entries = chainEvents(head, todo);
      this.sql.exec("DELETE FROM meta WHERE k = 'audit_head'");
      const written = await insertAuditEntries(this.env.DB, entries);
      if (written === entries.length) return this.saveAuditHead((entries.at(-1) as { hash: string }).hash);
      head = null;
    }
    throw new Error("the audit chain head kept moving; try again");
  }

  private async unwritten(events: AuditEvent[]): Promise<AuditEvent[]> {
    const written = new Set<string>();
    for (let i = 0; i < events.length; i += EVENT_ID_PAGE) {
      const page = events.slice(i, i + EVENT_ID_PAGE).map((e) => e.eventId);
      for (const id of await writtenEventIds(this.env.DB, page)) written.add(id);
    }
    return events.filter((e) => !written.has(e.eventId));
  }

  private auditHead(): string | null {
    return (this.sql.exec("SELECT v FROM meta WHERE k = 'audit_head'").toArray()[0]?.v as string | undefined) ?? null;
  }

  private saveAuditHead(hash: string): void {
    this.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('audit_head', ?)", hash);
  }

  /** The hub's team: every caller names it (hubs are named by team id); kept for alarms. */
  private adopt(teamId: string): void {
    this.sql.exec("INSERT OR IGNORE INTO meta (k, v) VALUES ('team', ?)", teamId);
  }

  private teamId(): string | null {
    return (this.sql.exec("SELECT v FROM meta WHERE k = 'team'").toArray()[0]?.v as string | undefined) ?? null;
  }

  private recipients(news: ApprovalNews): HubDevice[] {
    const query =
      news.recipients === "session_owner"
        ? this.sql.exec("SELECT * FROM devices WHERE user_id = ?", news.ownerUserId)
        : this.sql.exec(
            `SELECT d.* FROM devices d JOIN members m ON m.user_id = d.user_id
              WHERE m.role IN (${DECIDER_ROLES.map(() => "?").join(", ")})`,
            ...DECIDER_ROLES,
          );
    return query.toArray().map((r) => ({
      id: r.id as string,
      userId: r.user_id as string,
      name: r.name as string,
      endpoint: r.endpoint as string,
      p256dh: r.p256dh as string,
      auth: r.auth as string,
    }));
  }

  // ── sending, with retries ────────────────────────────────────────────────

  private enqueue(
    deviceId: string,
    approvalId: string | null,
    payload: PushPayload,
    urgency: "high" | "normal",
    expiresAt: number,
    now: number,
  ): void {
    this.sql.exec(
      "INSERT INTO push_queue (device_id, approval_id, payload, urgency, expires_at, next_at) VALUES (?, ?, ?, ?, ?, ?)",
      deviceId,
      approvalId,
      JSON.stringify(payload),
      urgency,
      expiresAt,
      now,
    );
  }

  /** Sends what is due at `now`; failures wait with backoff, until their message would be too late. */
  async drain(now = Date.now()): Promise<void> {
    const vapid = this.vapid();
    this.sql.exec("DELETE FROM push_queue WHERE expires_at <= ?", now);
    // Claim the due jobs before the first await: a drain running alongside (another news item,
    // the alarm) must not send them a second time. A claim that outlives a crash just retries.
    const due = this.sql
      .exec("UPDATE push_queue SET next_at = ? WHERE next_at <= ? RETURNING *", now + SEND_CLAIM_MS, now)
      .toArray()
      .sort((a, b) => (a.seq as number) - (b.seq as number));
    await Promise.all(due.map((job) => this.sendJob(job, vapid)));
    const next = this.sql.exec("SELECT MIN(next_at) AS at FROM push_queue").one().at as number | null;
    if (next !== null) await this.ctx.storage.setAlarm(next);
  }

  private async sendJob(job: Record<string, SqlStorageValue>, vapid: VapidKeys | null): Promise<void> {
    const seq = job.seq as number;
    const approvalId = job.approval_id as string | null;
    const device = this.sql.exec("SELECT * FROM devices WHERE id = ?", job.device_id).toArray()[0];
    if (!device || !vapid) {
      this.sql.exec("DELETE FROM push_queue WHERE seq = ?", seq);
      return;
    }
    const subscription: PushSubscription = {
      endpoint: device.endpoint as string,
      keys: { p256dh: device.p256dh as string, auth: device.auth as string },
    };
    const expiresAt = job.expires_at as number;
    const ttlSeconds = (expiresAt - Date.now()) / 1000;
    const payload = JSON.parse(job.payload as string) as PushPayload;
    const topic = "approvalId" in payload ? pushTopic(payload.approvalId) : undefined;
    if (approvalId) this.track(approvalId, device.id as string, "sent_at");
    const outcome = await sendPush(
      subscription,
      payload,
      { ttlSeconds, urgency: job.urgency as "high" | "normal", topic },
      vapid,
    );
    if (outcome === "retry") {
      const attempts = (job.attempts as number) + 1;
      const wait = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** attempts);
      this.sql.exec("UPDATE push_queue SET attempts = ?, next_at = ? WHERE seq = ?", attempts, Date.now() + wait, seq);
      return;
    }
    this.sql.exec("DELETE FROM push_queue WHERE seq = ?", seq);
    if (outcome === "gone") await this.dropDevice(device.id as string);
    if (approvalId) this.track(approvalId, device.id as string, outcome === "delivered" ? "delivered_at" : "failed_at");
  }

  private track(approvalId: string, deviceId: string, column: "sent_at" | "delivered_at" | "failed_at"): void {
    this.sql.exec(
      `UPDATE deliveries SET ${column} = ? WHERE approval_id = ? AND device_id = ?`,
      Date.now(),
      approvalId,
      deviceId,
    );
    this.broadcast("approval", approvalId);
  }

  /** The push service says the subscription is gone (404/410): forget the device everywhere. */
  private async dropDevice(deviceId: string): Promise<void> {
    await this.deviceRemoved(deviceId);
    const teamId = this.teamId();
    if (teamId) await deleteDevice(this.env.DB, teamId, deviceId);
  }

  override async alarm(): Promise<void> {
    await this.drain();
  }

  private vapid(): VapidKeys | null {
    const { VAPID_PUBLIC_KEY, VAPID_PRIVATE_KEY, VAPID_SUBJECT } = this.env;
    if (!VAPID_PUBLIC_KEY || !VAPID_PRIVATE_KEY) return null;
    return {
      publicKey: VAPID_PUBLIC_KEY,
      privateKey: VAPID_PRIVATE_KEY,
      subject: VAPID_SUBJECT ?? "mailto:tapgate@localhost",
    };
  }

  /** Records the latest state; a resolved approval never goes back to pending. Returns whether it changed. */
  private remember(approval: Approval, ownerUserId: string, now: number): boolean {
    const changed = this.sql
      .exec(
        `INSERT INTO approvals (id, owner_user_id, state, expires_at, updated_at, record) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at, record = excluded.record
          WHERE approvals.state = 'pending'
         RETURNING id`,
        approval.id,
        ownerUserId,
        approval.state,
        approval.expiresAt,
        now,
        JSON.stringify(approval),
      )
      .toArray();
    return changed.length > 0;
  }

  private prune(now: number): void {
    const old = now - KEEP_RESOLVED_MS;
    this.sql.exec(
      "DELETE FROM deliveries WHERE approval_id IN (SELECT id FROM approvals WHERE state <> 'pending' AND updated_at < ?)",
      old,
    );
    this.sql.exec("DELETE FROM approvals WHERE state <> 'pending' AND updated_at < ?", old);
  }
}

/** The lock screen shows the tool title or a generic line; never arguments. */
function lockScreenTitle(approval: Approval, policy: ApprovalNews["lockScreen"]): string {
  const title = approval.snapshot.toolCall.title;
  if (policy === "generic" || typeof title !== "string" || title.trim() === "")
    return "An agent is asking for permission";
  return title.length > 80 ? `${title.slice(0, 79)}…` : title;
}
