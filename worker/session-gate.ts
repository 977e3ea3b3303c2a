/**
 * SessionGate: one Durable Object per agent session (`${teamId}/${sessionId}`).
 * It holds the session's permission requests until a human decides, and is the source of truth
 * for every approval of the session. Everything it must not lose lives in its SQLite storage,
 * so hibernation and eviction lose nothing; D1 gets a copy from an outbox after the agent has
 * its answer.
 */
import { DurableObject } from "cloudflare:workers";
import {
  cancelRequestParamsSchema,
  failClosedAnswer,
  HEARTBEAT_INTERVAL_MS,
  helloParamsSchema,
  LIMITS,
  METHODS,
  type PermissionOption,
  type RequestPermissionParams,
  type RequestPermissionResponse,
  RPC_ERROR,
  type RpcId,
  requestPermissionParamsSchema,
  sessionCancelParamsSchema,
  sessionUpdateParamsSchema,
  tapgateMetaSchema,
  toolCallUpdateSchema,
} from "../sdk/src/protocol";
import { canonicalJson, randomBase62, sha256Hex } from "./crypto";
import { type D1OutboxOp, type OutboxOp, outboxStatement } from "./db";
import { type AgentCaller, HttpAgents, type HttpOpenResult, type HttpPollResult } from "./gate-http";
import {
  keyTag,
  parseFrame,
  type RpcMessage,
  rpcError,
  rpcIdKey,
  rpcResult,
  type SocketIdentity,
  socketTag,
} from "./gate-socket";
import { migrate, type PendingRow, type SessionMeta, type StoredRow } from "./gate-storage";
import { type ApprovalNews, hubFor } from "./hub/api";
import type { AuditEvent } from "./hub/audit-chain";
import { closeQuietly, objectUpgrade, reciprocateClose, upgradeIdentity } from "./object-sockets";
import { offeredOptions, requestLifetimeMs, type TeamPolicy, type VersionedPolicy } from "./policy";
import { DECIDER_ROLES } from "./roles";
import type { Approval, ApprovalState, DecidedBy, Env, ResolutionReason, Role, SessionInfo } from "./types";

/** Who opens a socket: set by the Worker after it checked the API key. */
export interface GateJoin {
  teamId: string;
  sessionId: string;
  ownerUserId: string;
  keyId: string;
  userId: string;
  policy: TeamPolicy;
  policyVersion: number;
}

export interface DecisionInput {
  approvalId: string;
  teamId: string;
  userId: string;
  name: string;
  role: Role;
  device: string;
  optionId: string;
  requestHash: string;
}

export type DecisionResult =
  | { status: 200 | 409 | 410; approval: Approval }
  | { status: 409; error: "request_changed"; approval: Approval }
  | { status: 400; error: "option_not_offered" }
  | { status: 403; error: "not_session_owner" | "role_may_not_decide" }
  | { status: 404 };

/** What holds a request open: a socket (answered on it) or an HTTP lease that polls renew. */
export interface Holder {
  socketId: string;
  rpcKey: string;
  keyId: string;
  leaseUntil: number | null;
}

export type Refusal = { refused: "invalid_params" | "too_many_pending"; message: string; issues?: unknown[] };

export interface Resolution {
  state: Exclude<ApprovalState, "pending">;
  reason: ResolutionReason;
  optionId?: string;
  decidedBy?: DecidedBy;
}

const IDENTITY_HEADER = "x-tapgate-join";
const OUTBOX_RETRY_MS = 5_000;
const OUTBOX_RETRY_MAX_MS = 5 * 60_000;
const KEPT_TOOL_CALLS = 256;
const PUSHES_PER_WINDOW = 10;
const PUSH_WINDOW_MS = 10 * 60 * 1000;
const EMPTY_INFO: SessionInfo = { title: null, agent: null, host: null, cwd: null };

/** Approval ids name their Durable Object, so a decision is routed without a D1 lookup. */
const APPROVAL_ID_PATTERN = /^apr_([0-9a-f]{64})_[0-9A-Za-z]{22}$/;

export function joinRequest(request: Request, join: GateJoin): Request {
  return objectUpgrade(request, IDENTITY_HEADER, join);
}

/** The SessionGate of an agent session. */
export function sessionGate(env: Env, teamId: string, sessionId: string) {
  return env.SESSION_GATE.get(env.SESSION_GATE.idFromName(`${teamId}/${sessionId}`));
}

/** The SessionGate an approval id names, or null for ids that cannot be ours. */
export function gateFor(env: Env, approvalId: string) {
  const hex = APPROVAL_ID_PATTERN.exec(approvalId)?.[1];
  if (!hex) return null;
  try {
    return env.SESSION_GATE.get(env.SESSION_GATE.idFromString(hex));
  } catch {
    return null;
  }
}

export class SessionGate extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  /** Agents that poll over HTTP instead of holding a socket (not exposed over RPC: a field). */
  readonly http: HttpAgents;
  private flushing: Promise<void> | null = null;
  /** The alarm this instance set; unknown (null) after a restart, so the first schedule sets one. */
  private alarmAt: number | null = null;
  /** How long the outbox waits before its next try; doubles while D1 keeps failing. */
  private outboxRetryMs = OUTBOX_RETRY_MS;
  private flushAgain = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.http = new HttpAgents({
      sql: this.sql,
      join: (join) => this.join(join),
      meta: () => this.meta(),
      open: (meta, holder, params, now) => this.open(meta, holder, params, now),
      resolve: (row, r, now) => this.resolve(row, r, now),
      agentAnswer: (row, r) => this.agentAnswer(row, r),
      afterChange: () => this.afterChange(),
    });
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    migrate(ctx.storage);
    // A pending request whose socket is gone was held by a previous instance (restart, reset,
    // deploy): nobody can answer it any more, so it ends now rather than never.
    this.resolveOrphans(Date.now());
  }

  // ── sockets ──────────────────────────────────────────────────────────────

  override async fetch(request: Request): Promise<Response> {
    const join = upgradeIdentity<GateJoin>(request, IDENTITY_HEADER);
    if (!join) return new Response("expected a WebSocket upgrade from the Worker", { status: 400 });
    if (!this.join(join)) {
      return Response.json({ error: "key_revoked", message: "this API key was revoked" }, { status: 401 });
    }
    const { 0: client, 1: server } = new WebSocketPair();
    const now = Date.now();
    const identity: SocketIdentity = {
      socketId: randomBase62(16),
      keyId: join.keyId,
      userId: join.userId,
      connectedAt: now,
      lastMessageAt: now,
    };
    this.ctx.acceptWebSocket(server, [socketTag(identity.socketId), keyTag(join.keyId)]);
    server.serializeAttachment(identity);
    this.noteConnection(now);
    this.afterChange();
    return new Response(null, { status: 101, webSocket: client });
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const identity = ws.deserializeAttachment() as SocketIdentity;
    identity.lastMessageAt = Date.now();
    ws.serializeAttachment(identity);
    if (typeof message !== "string") {
      send(ws, rpcError(null, RPC_ERROR.invalidRequest, "binary frames are not supported; send JSON text"));
      return;
    }
    const parsed = parseFrame(message);
    if (!parsed.ok) {
      send(ws, parsed.response);
      return;
    }
    const replies: object[] = [];
    for (const m of parsed.messages) {
      const reply = m.kind === "invalid" ? m.response : this.handle(identity, m);
      if (reply) replies.push(reply);
    }
    if (replies.length > 0) send(ws, parsed.batch ? replies : replies[0]);
    this.afterChange();
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    this.dropSocket(ws, "agent_disconnected");
    reciprocateClose(ws, code, reason);
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    this.dropSocket(ws, "agent_disconnected");
  }

  /**
   * Records who joins with which policy; null when the key was revoked here. A policy the hub
   * pushed may be newer than the one the Worker read for this join: the newer version wins.
   */
  private join(join: GateJoin): SessionMeta | null {
    if (this.sql.exec("SELECT 1 FROM revoked_keys WHERE key_id = ?", join.keyId).toArray().length > 0) return null;
    const known = this.meta();
    const keepKnown = known && (known.policyVersion ?? 0) > join.policyVersion;
    const meta: SessionMeta = {
      teamId: join.teamId,
      sessionId: join.sessionId,
      ownerUserId: join.ownerUserId,
      policy: keepKnown ? known.policy : join.policy,
      policyVersion: keepKnown ? known.policyVersion : join.policyVersion,
      info: known?.info ?? EMPTY_INFO,
    };
    this.saveMeta(meta);
    return meta;
  }

  /**
   * The team's policy changed: requests opened from now on use it (open ones keep the options
   * and lifetime they were opened with). Older versions than the one held are ignored.
   */
  async applyPolicy(teamId: string, update: VersionedPolicy): Promise<boolean> {
    const meta = this.meta();
    if (!meta || meta.teamId !== teamId || (meta.policyVersion ?? 0) >= update.version) return false;
    this.saveMeta({ ...meta, policy: update.policy, policyVersion: update.version });
    return true;
  }

  private dropSocket(ws: WebSocket, reason: ResolutionReason): void {
    const { socketId } = ws.deserializeAttachment() as SocketIdentity;
    const now = Date.now();
    for (const row of this.pendingRows("socket_id = ?", socketId)) this.resolve(row, { state: "denied", reason }, now);
    this.noteConnection(now);
    this.afterChange();
  }

  private handle(identity: SocketIdentity, m: RpcMessage): object | null {
    if (m.kind === "response") return null;
    const id = m.kind === "request" ? m.id : null;
    const invalidParams = (issues: unknown) =>
      id === null ? null : rpcError(id, RPC_ERROR.invalidParams, `invalid params for ${m.method}`, { issues });
    switch (m.method) {
      case METHODS.requestPermission: {
        if (id === null) return null; // a notification cannot be answered, so it cannot be held
        const params = requestPermissionParamsSchema.safeParse(m.params);
        if (!params.success) return invalidParams(params.error.issues);
        return this.request(identity, id, params.data);
      }
      case METHODS.hello: {
        const params = helloParamsSchema.safeParse(m.params ?? {});
        if (!params.success) return invalidParams(params.error.issues);
        this.hello(params.data);
        return id === null ? null : rpcResult(id, {});
      }
      case METHODS.sessionUpdate: {
        const params = sessionUpdateParamsSchema.safeParse(m.params);
        if (!params.success) return invalidParams(params.error.issues);
        // Route by session: another session's tool calls never decorate this one's cards.
        if (params.data.sessionId !== this.meta()?.sessionId) return invalidParams("sessionId is not this session");
        this.mergeToolCall(params.data.update);
        return id === null ? null : rpcResult(id, null);
      }
      case METHODS.cancelRequest: {
        const params = cancelRequestParamsSchema.safeParse(m.params);
        if (!params.success) return invalidParams(params.error.issues);
        const now = Date.now();
        const rows = this.pendingRows(
          "socket_id = ? AND rpc_id = ?",
          identity.socketId,
          rpcIdKey(params.data.requestId),
        );
        for (const row of rows) this.resolve(row, { state: "cancelled", reason: "agent_cancelled" }, now);
        return id === null ? null : rpcResult(id, null);
      }
      case METHODS.sessionCancel: {
        const params = sessionCancelParamsSchema.safeParse(m.params);
        if (!params.success) return invalidParams(params.error.issues);
        if (params.data.sessionId !== this.meta()?.sessionId) return invalidParams("sessionId is not this session");
        const now = Date.now();
        for (const row of this.pendingRows("1"))
          this.resolve(row, { state: "cancelled", reason: "session_cancelled" }, now);
        return id === null ? null : rpcResult(id, null);
      }
      default:
        return id === null ? null : rpcError(id, RPC_ERROR.methodNotFound, `method not found: ${m.method}`);
    }
  }

  // ── requests ─────────────────────────────────────────────────────────────

  /** Holds a socket's permission request until it is decided; returns an error reply if it is refused. */
  private request(identity: SocketIdentity, id: RpcId, params: RequestPermissionParams): object | null {
    const meta = this.meta();
    if (!meta) return rpcError(id, RPC_ERROR.internal, "session not initialised");
    const rpcKey = rpcIdKey(id);
    if (this.pendingRows("socket_id = ? AND rpc_id = ?", identity.socketId, rpcKey).length > 0) {
      return rpcError(id, RPC_ERROR.invalidRequest, `id ${rpcKey} is already pending on this socket`);
    }
    const holder = { socketId: identity.socketId, rpcKey, keyId: identity.keyId, leaseUntil: null };
    const opened = this.open(meta, holder, params, Date.now());
    if (!("refused" in opened)) return null;
    const code = opened.refused === "too_many_pending" ? RPC_ERROR.tooManyPending : RPC_ERROR.invalidParams;
    return rpcError(id, code, opened.message, opened.issues && { issues: opened.issues });
  }

  /** Holds a new permission request for its holder, or says why it is refused. */
  private open(meta: SessionMeta, holder: Holder, params: RequestPermissionParams, now: number): Approval | Refusal {
    if (params.sessionId !== meta.sessionId) {
      return { refused: "invalid_params", message: `sessionId is not this session's (${meta.sessionId})` };
    }
    const ask = tapgateMetaSchema.safeParse(params._meta?.tapgate ?? {});
    if (!ask.success) {
      const issues = ask.error.issues.map((i) => ({ ...i, path: ["_meta", "tapgate", ...i.path] }));
      return { refused: "invalid_params", message: "invalid _meta.tapgate", issues };
    }
    if (this.pendingCount() >= LIMITS.pendingPerSession) {
      const message = `this session already has ${LIMITS.pendingPerSession} pending requests`;
      return { refused: "too_many_pending", message };
    }

    const approval = newApproval({
      id: `apr_${this.ctx.id.toString()}_${randomBase62(22)}`,
      meta,
      params,
      knownToolCall: this.toolCall(params.toolCall.toolCallId),
      lifetimeMs: requestLifetimeMs(meta.policy, ask.data.timeoutMs),
      now,
    });
    this.sql.exec(
      `INSERT INTO approvals (id, rpc_id, socket_id, key_id, state, expires_at, lease_until, agent_options, record)
       VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?)`,
      approval.id,
      holder.rpcKey,
      holder.socketId,
      holder.keyId,
      approval.expiresAt,
      holder.leaseUntil,
      JSON.stringify(params.options),
      JSON.stringify(approval),
    );
    this.enqueue({ op: "approval", teamId: meta.teamId, ownerUserId: meta.ownerUserId, approval });
    this.enqueue(auditOp(meta, approval, `key:${holder.keyId}`, "approval.requested", now));
    this.tellHub(meta, (hub) =>
      hub.approvalCreated(meta.teamId, {
        approval,
        ownerUserId: meta.ownerUserId,
        recipients: meta.policy.notify,
        lockScreen: meta.policy.lockScreen,
        push: this.pushBudget(now),
      }),
    );
    if (approval.options.length === 0) {
      // Team policy hid every option the agent offered: nobody could ever decide it.
      this.resolve(
        this.pendingRows("id = ?", approval.id)[0] as PendingRow,
        { state: "denied", reason: "invalid" },
        now,
      );
    }
    return approval;
  }

  /**
   * The one way out of `pending`. Synchronous from the read to the write, so no other event
   * can interleave: each request is claimed, and answered, exactly once.
   */
  private resolve(row: PendingRow, r: Resolution, now: number): Approval | null {
    const claimed = this.sql
      .exec("UPDATE approvals SET state = ? WHERE id = ? AND state = 'pending' RETURNING id", r.state, row.id)
      .toArray();
    if (claimed.length === 0) return null;
    const approval: Approval = {
      ...(JSON.parse(row.record) as Approval),
      state: r.state,
      reason: r.reason,
      resolvedAt: now,
      optionId: r.optionId ?? null,
      decidedBy: r.decidedBy ?? null,
    };
    const answer = this.agentAnswer(row, r);
    this.sql.exec(
      "UPDATE approvals SET record = ?, answer = ? WHERE id = ?",
      JSON.stringify(approval),
      JSON.stringify(answer),
      row.id,
    );
    this.answer(row, answer);
    this.http.polls.wake(row.id);
    const meta = this.meta();
    if (meta) {
      const actor = r.decidedBy ? `user:${r.decidedBy.userId}` : "system";
      this.enqueue({ op: "approval", teamId: meta.teamId, ownerUserId: meta.ownerUserId, approval });
      this.enqueue(auditOp(meta, approval, actor, `approval.${r.state}`, now));
      this.tellHub(meta, (hub) => hub.approvalResolved(meta.teamId, approval, meta.ownerUserId));
    }
    return approval;
  }

  /**
   * The team's hub shows the news live and pushes it to phones. Never awaited on the agent's
   * path: a slow or failing push must not delay or fail a request.
   */
  private tellHub(meta: SessionMeta, news: (hub: ReturnType<typeof hubFor>) => Promise<unknown>): void {
    this.ctx.waitUntil(news(hubFor(this.env, meta.teamId)).catch(() => undefined));
  }

  /** Push fatigue: at most PUSHES_PER_WINDOW pushes per session per window, then one summary. */
  private pushBudget(now: number): ApprovalNews["push"] {
    const windowStart = now - PUSH_WINDOW_MS;
    this.sql.exec("DELETE FROM push_log WHERE at <= ?", windowStart);
    const sent = this.sql.exec("SELECT COUNT(*) AS n FROM push_log").one().n as number;
    if (sent < PUSHES_PER_WINDOW) {
      this.sql.exec("INSERT INTO push_log (at) VALUES (?)", now);
      return { kind: "approval" };
    }
    const summaryAt = Number(this.sql.exec("SELECT v FROM meta WHERE k = 'summary_at'").toArray()[0]?.v ?? 0);
    if (summaryAt > windowStart) return { kind: "none" };
    this.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('summary_at', ?)", String(now));
    return { kind: "summary", waiting: this.pendingCount() };
  }

  /** The ACP `outcome`, and in `_meta.tapgate` which approval it was, why it ended and who decided. */
  private agentAnswer(
    row: PendingRow,
    r: { reason: ResolutionReason | null; optionId?: string | null; decidedBy?: DecidedBy | null },
  ): RequestPermissionResponse {
    const { outcome } =
      r.reason === "decided" && r.optionId
        ? { outcome: { outcome: "selected" as const, optionId: r.optionId } }
        : r.reason === "agent_cancelled" || r.reason === "session_cancelled"
          ? { outcome: { outcome: "cancelled" as const } }
          : failClosedAnswer(JSON.parse(row.agent_options) as PermissionOption[]);
    const decidedBy = r.decidedBy ? { name: r.decidedBy.name, device: r.decidedBy.device } : undefined;
    return { outcome, _meta: { tapgate: { approvalId: row.id, reason: r.reason, ...(decidedBy && { decidedBy }) } } };
  }

  /** Responses go only to the socket that sent the request (HTTP-held requests have none: they are polled). */
  private answer(row: PendingRow, result: RequestPermissionResponse): void {
    const id = JSON.parse(row.rpc_id) as RpcId;
    for (const ws of this.ctx.getWebSockets(socketTag(row.socket_id))) send(ws, rpcResult(id, result));
  }

  // ── the human side (RPC from the Worker) ─────────────────────────────────

  async getApproval(teamId: string, approvalId: string): Promise<Approval | null> {
    if (this.meta()?.teamId !== teamId) return null;
    const row = this.sql.exec("SELECT record FROM approvals WHERE id = ?", approvalId).toArray()[0];
    return row ? (JSON.parse(row.record as string) as Approval) : null;
  }

  async decide(d: DecisionInput): Promise<DecisionResult> {
    const meta = this.meta();
    const row = this.sql.exec<StoredRow>("SELECT * FROM approvals WHERE id = ?", d.approvalId).toArray()[0];
    if (!meta || !row || meta.teamId !== d.teamId) return { status: 404 };
    const now = Date.now();
    // Time may have run out before the alarm got here: that ends the request, not a late allow.
    const lapsed = this.lapse(row, now);
    if (lapsed) return { status: 410, approval: lapsed };
    const current = JSON.parse(row.record) as Approval;
    if (row.state !== "pending") return { status: current.reason === "decided" ? 409 : 410, approval: current };
    if (!DECIDER_ROLES.includes(d.role)) return { status: 403, error: "role_may_not_decide" };
    if (meta.policy.deciders === "session_owner" && d.userId !== meta.ownerUserId) {
      return { status: 403, error: "not_session_owner" };
    }
    const option = current.options.find((o) => o.optionId === d.optionId);
    if (!option) return { status: 400, error: "option_not_offered" };
    if (d.requestHash !== current.requestHash) return { status: 409, error: "request_changed", approval: current };
    const state = option.kind.startsWith("allow") ? "allowed" : "denied";
    const decidedBy = { userId: d.userId, name: d.name, device: d.device };
    const approval = this.resolve(row, { state, reason: "decided", optionId: option.optionId, decidedBy }, now);
    this.afterChange();
    return approval ? { status: 200, approval } : { status: 409, approval: current };
  }

  /** Resolves a pending row whose lifetime or HTTP lease is over; the resolved approval, or null. */
  private lapse(row: StoredRow, now: number): Approval | null {
    if (row.state !== "pending") return null;
    const expired = (row.expires_at as number) <= now;
    const leaseLapsed = row.lease_until !== null && row.lease_until <= now;
    if (!expired && !leaseLapsed) return null;
    const approval = expired
      ? this.resolve(row, { state: "expired", reason: "expired" }, now)
      : this.resolve(row, { state: "denied", reason: "agent_disconnected" }, now);
    this.afterChange();
    return approval;
  }

  /** A revoked key: its pending requests are denied and its sockets closed, now and on rejoin. */
  async revokeKey(teamId: string, keyId: string): Promise<number> {
    if (this.meta()?.teamId !== teamId) return 0;
    this.sql.exec("INSERT OR IGNORE INTO revoked_keys (key_id) VALUES (?)", keyId);
    const now = Date.now();
    const rows = this.pendingRows("key_id = ?", keyId);
    for (const row of rows) this.resolve(row, { state: "denied", reason: "key_revoked" }, now);
    for (const ws of this.ctx.getWebSockets(keyTag(keyId))) closeQuietly(ws, 4001, "API key revoked");
    this.noteConnection(now);
    this.afterChange();
    return rows.length;
  }

  // ── agents over HTTP (RPC from the Worker) ───────────────────────────────

  /** Holds a request for an agent that polls instead of holding a socket. */
  async openOverHttp(join: GateJoin, params: RequestPermissionParams): Promise<HttpOpenResult> {
    return this.http.open(join, params);
  }

  /** Answers once the approval is resolved or `waitMs` has passed; every poll renews the lease. */
  async poll(caller: AgentCaller, approvalId: string, waitMs: number): Promise<HttpPollResult> {
    return this.http.poll(caller, approvalId, waitMs);
  }

  /** The agent gives a request up: `cancelled` while pending, else its final answer again. */
  async cancelOverHttp(caller: AgentCaller, approvalId: string): Promise<HttpPollResult> {
    return this.http.cancel(caller, approvalId);
  }

  // ── time: expiry, heartbeats, leases, outbox retries ─────────────────────

  override async alarm(): Promise<void> {
    this.alarmAt = null;
    this.sweep(Date.now());
    // D1 down is no reason to skip the next alarm: the outbox keeps the rows for the retry.
    await this.flushOutbox().catch(() => undefined);
    this.scheduleAlarm();
  }

  /** Ends what is due at `now`: expired requests, lapsed leases, silent (half-open) sockets, orphans. */
  sweep(now: number): void {
    for (const row of this.pendingRows("expires_at <= ?", now))
      this.resolve(row, { state: "expired", reason: "expired" }, now);
    for (const row of this.pendingRows("lease_until <= ?", now))
      this.resolve(row, { state: "denied", reason: "agent_disconnected" }, now);
    for (const ws of this.ctx.getWebSockets()) {
      const identity = ws.deserializeAttachment() as SocketIdentity | null;
      if (!identity) continue;
      const lastPing = this.ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? 0;
      if (now - Math.max(lastPing, identity.lastMessageAt) <= 2 * HEARTBEAT_INTERVAL_MS) continue;
      closeQuietly(ws, 4000, "no heartbeat");
      for (const row of this.pendingRows("socket_id = ?", identity.socketId)) {
        this.resolve(row, { state: "denied", reason: "agent_disconnected" }, now);
      }
    }
    this.resolveOrphans(now);
  }

  private resolveOrphans(now: number): void {
    const live = new Set(
      this.ctx.getWebSockets().map((ws) => (ws.deserializeAttachment() as SocketIdentity | null)?.socketId),
    );
    // HTTP-held requests are not orphans: their agent polls any instance until its lease lapses.
    for (const row of this.pendingRows("lease_until IS NULL")) {
      if (!live.has(row.socket_id)) this.resolve(row, { state: "denied", reason: "service_restart" }, now);
    }
    this.afterChange();
  }

  /** One alarm serves expiry, leases, heartbeat checks while sockets hold requests, and outbox retries. */
  private scheduleAlarm(): void {
    const due = this.sql
      .exec<{ expiry: number | null; lease: number | null; socketHeld: number }>(
        `SELECT MIN(expires_at) AS expiry, MIN(lease_until) AS lease, COUNT(*) - COUNT(lease_until) AS socketHeld
           FROM approvals WHERE state = 'pending'`,
      )
      .one();
    const candidates = [due.expiry, due.lease].filter((at) => at !== null);
    if (due.socketHeld > 0) candidates.push(Date.now() + HEARTBEAT_INTERVAL_MS);
    if (this.outboxSize() > 0) candidates.push(Date.now() + this.outboxRetryMs);
    if (candidates.length === 0) return;
    const at = Math.min(...candidates);
    // An alarm that fires early just reschedules, so only ever move it earlier: one storage
    // write per burst of requests, and none on the decision path.
    if (this.alarmAt !== null && this.alarmAt > Date.now() && this.alarmAt <= at) return;
    this.alarmAt = at;
    void this.ctx.storage.setAlarm(at);
  }

  /** After any change: schedule the next alarm and hand the outbox to D1 in the background. */
  private afterChange(): void {
    this.scheduleAlarm();
    if (this.outboxSize() > 0) void this.flushOutbox().catch(() => undefined);
  }

  // ── the outbox to D1 ─────────────────────────────────────────────────────

  private enqueue(op: OutboxOp): void {
    this.sql.exec("INSERT INTO outbox (op) VALUES (?)", JSON.stringify(op));
  }

  private outboxSize(): number {
    return this.sql.exec("SELECT COUNT(*) AS n FROM outbox").one().n as number;
  }

  /**
   * Writes the outbox in order, one flush at a time: index rows to D1, audit events to the team's
   * TeamHub (the audit chain's one writer), which answers once D1 has them. Rows leave only once
   * both acknowledged; a retry replays both, and both are idempotent.
   */
  async flushOutbox(): Promise<void> {
    if (this.flushing) {
      this.flushAgain = true;
      return this.flushing;
    }
    this.flushing = (async () => {
      do {
        this.flushAgain = false;
        const rows = this.sql.exec("SELECT seq, op FROM outbox ORDER BY seq LIMIT 50").toArray();
        if (rows.length === 0) break;
        const ops = rows.map((r) => JSON.parse(r.op as string) as OutboxOp);
        try {
          await Promise.all([this.writeIndex(ops), this.writeAudit(ops)]);
        } catch (error) {
          // Keep the rows, and back off: a long D1 outage must not wake the object every 5 s.
          this.outboxRetryMs = Math.min(this.outboxRetryMs * 2, OUTBOX_RETRY_MAX_MS);
          throw error;
        }
        this.outboxRetryMs = OUTBOX_RETRY_MS;
        this.sql.exec("DELETE FROM outbox WHERE seq <= ?", rows[rows.length - 1]?.seq as number);
        if (rows.length === 50) this.flushAgain = true;
      } while (this.flushAgain);
    })().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  private async writeIndex(ops: OutboxOp[]): Promise<void> {
    const writes = ops.filter((o): o is D1OutboxOp => o.op !== "audit");
    if (writes.length > 0) await this.env.DB.batch(writes.map((o) => outboxStatement(this.env.DB, o)));
  }

  private async writeAudit(ops: OutboxOp[]): Promise<void> {
    const events: AuditEvent[] = ops.flatMap(({ op, ...e }) => (op === "audit" ? [e as AuditEvent] : []));
    const teamId = events[0]?.teamId;
    if (teamId) await hubFor(this.env, teamId).appendAudit(events);
  }

  // ── session metadata and tool calls ──────────────────────────────────────

  private hello(params: { title?: string; agent?: SessionInfo["agent"]; host?: string; cwd?: string }): void {
    const meta = this.meta();
    if (!meta) return;
    meta.info = {
      title: params.title ?? meta.info.title,
      agent: params.agent ?? meta.info.agent,
      host: params.host ?? meta.info.host,
      cwd: params.cwd ?? meta.info.cwd,
    };
    this.saveMeta(meta);
    this.noteConnection(Date.now());
  }

  /**
   * Records whether the session has a live socket: for the sessions index in D1, and for the
   * team's hub, which shows it live and answers with a newer policy if one raced our join.
   */
  private noteConnection(now: number): void {
    const meta = this.meta();
    if (!meta) return;
    const connected = this.ctx.getWebSockets().some((ws) => ws.readyState === WebSocket.READY_STATE_OPEN);
    this.enqueue({
      op: "session",
      teamId: meta.teamId,
      sessionId: meta.sessionId,
      info: meta.info,
      connected,
      at: now,
    });
    this.tellHub(meta, async (hub) => {
      const newer = await hub.sessionChanged(meta.teamId, {
        sessionId: meta.sessionId,
        ownerUserId: meta.ownerUserId,
        info: meta.info,
        connected,
        pending: this.pendingCount(),
        at: now,
        policyVersion: meta.policyVersion ?? 0,
      });
      if (newer) await this.applyPolicy(meta.teamId, newer);
    });
  }

  /** `tool_call` / `tool_call_update` merged by id, so a later permission request can show them. */
  private mergeToolCall(update: { sessionUpdate: string }): void {
    if (update.sessionUpdate !== "tool_call" && update.sessionUpdate !== "tool_call_update") return;
    const parsed = toolCallUpdateSchema.safeParse(update);
    if (!parsed.success) return;
    const { sessionUpdate: _, ...fields } = withoutNullish(parsed.data) as Record<string, unknown>;
    const merged = { ...this.toolCall(parsed.data.toolCallId), ...fields };
    this.sql.exec(
      `INSERT INTO tool_calls (id, data, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`,
      parsed.data.toolCallId,
      JSON.stringify(merged),
      Date.now(),
    );
    this.sql.exec(
      "DELETE FROM tool_calls WHERE id NOT IN (SELECT id FROM tool_calls ORDER BY updated_at DESC LIMIT ?)",
      KEPT_TOOL_CALLS,
    );
  }

  private toolCall(toolCallId: string): Record<string, unknown> {
    const row = this.sql.exec("SELECT data FROM tool_calls WHERE id = ?", toolCallId).toArray()[0];
    return row ? (JSON.parse(row.data as string) as Record<string, unknown>) : {};
  }

  // ── storage ──────────────────────────────────────────────────────────────

  private meta(): SessionMeta | null {
    const row = this.sql.exec("SELECT v FROM meta WHERE k = 'session'").toArray()[0];
    return row ? (JSON.parse(row.v as string) as SessionMeta) : null;
  }

  private saveMeta(meta: SessionMeta): void {
    this.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('session', ?)", JSON.stringify(meta));
  }

  private pendingRows(where: string, ...bindings: SqlStorageValue[]): PendingRow[] {
    return this.sql
      .exec<PendingRow>(`SELECT * FROM approvals WHERE state = 'pending' AND ${where} ORDER BY expires_at`, ...bindings)
      .toArray();
  }

  private pendingCount(): number {
    return this.sql.exec("SELECT COUNT(*) AS n FROM approvals WHERE state = 'pending'").one().n as number;
  }
}

/**
 * A new pending approval: the snapshot humans see (the request over what `session/update` told
 * about its tool call), hashed, with the options the team's policy lets humans pick.
 */
function newApproval(a: {
  id: string;
  meta: SessionMeta;
  params: RequestPermissionParams;
  knownToolCall: Record<string, unknown>;
  lifetimeMs: number;
  now: number;
}): Approval {
  const { toolCall } = a.params;
  const snapshot = {
    toolCall: { ...a.knownToolCall, ...withoutNullish(toolCall), toolCallId: toolCall.toolCallId },
    session: a.meta.info,
    ...(a.params._meta ? { meta: a.params._meta } : {}),
  };
  return {
    id: a.id,
    sessionId: a.meta.sessionId,
    state: "pending",
    reason: null,
    snapshot,
    options: offeredOptions(a.params.options, a.meta.policy).map(({ optionId, name, kind }) => ({
      optionId,
      name,
      kind,
    })),
    requestHash: sha256Hex(canonicalJson(snapshot)),
    createdAt: a.now,
    expiresAt: a.now + a.lifetimeMs,
    resolvedAt: null,
    optionId: null,
    decidedBy: null,
  };
}

function auditOp(meta: SessionMeta, a: Approval, actor: string, action: string, at: number): OutboxOp {
  // Ids and outcomes only: tool arguments never enter the audit log's detail.
  const detail = {
    sessionId: a.sessionId,
    state: a.state,
    reason: a.reason,
    optionId: a.optionId,
    decidedBy: a.decidedBy,
  };
  return { op: "audit", eventId: `${a.id}:${action}`, teamId: meta.teamId, at, actor, action, subject: a.id, detail };
}

function send(ws: WebSocket, message: unknown): void {
  try {
    ws.send(JSON.stringify(message));
  } catch {
    // The socket is closing; its close handler resolves what it held.
  }
}

function withoutNullish<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null && v !== undefined)) as Partial<T>;
}
