/**
 * SessionGate: one Durable Object per agent session (`${teamId}/${sessionId}`). It holds the
 * session's permission requests until a human decides, and is the source of truth for every
 * approval of the session. Everything it must not lose lives in its SQLite storage, so
 * hibernation and eviction lose nothing; D1 gets a copy from an outbox after the agent has its
 * answer.
 *
 * This file is the shell: it wires the subsystems and maps each platform handler (`fetch`,
 * `webSocketMessage`, `webSocketClose`, `webSocketError`, `alarm`) and each RPC method to one
 * wrapper that always ends in the post-change step (`afterChange`: schedule the alarm, flush
 * the outbox), so no path can forget it. It owns no rule, no SQL and no protocol: see
 * state-machine.ts, admission.ts, store.ts, session-stop.ts, socket-agents.ts, http-agents.ts, presence.ts, outbox.ts,
 * escalation.ts, resolved-cap.ts, retention.ts, alarm-clock.ts, closed-sockets.ts. A failure in one handler never stops the
 * others: a failing alarm backs off, a failing start-up sweep leaves the gate serving.
 */
import { DurableObject } from "cloudflare:workers";
import type { Approval, Owner } from "../../sdk/src/approval";
import type { AgentAsk } from "../../sdk/src/elicitation-protocol";
import { HEARTBEAT_INTERVAL_MS, type HelloParams, METHODS } from "../../sdk/src/protocol";
import { ALARM_BUDGET_MS, withDeadline } from "../deadline";
import type { VersionedPolicy } from "../policy";
import type { Env } from "../types";
import { Admission } from "./admission";
import { AlarmBackoff } from "./alarm-backoff";
import { AlarmClock } from "./alarm-clock";
import type {
  AgentCaller,
  DecisionInput,
  DecisionResult,
  DeliveryReceipts,
  GateJoin,
  GateRuleChoices,
  HttpOpenResult,
  HttpPollResult,
  SessionGateApi,
  StopInput,
  StopResult,
} from "./api";
import { ClosedSockets } from "./closed-sockets";
import { Escalation } from "./escalation";
import { HttpAgents } from "./http-agents";
import { type GateNews, gateHub, HubMail } from "./hub";
import { type KeyCheckHost, withdrawnKey } from "./key-check";
import { LadderStore } from "./ladder-store";
import { migrate } from "./migrations";
import { Outbox, type ReplayResult } from "./outbox";
import { OutboxStore } from "./outbox-store";
import { Presence } from "./presence";
import { ResolvedCap } from "./resolved-cap";
import { Retention } from "./retention";
import { SessionStops } from "./session-stop";
import { SocketAgents } from "./socket-agents";
import { joinOf, Sockets } from "./sockets";
import { StateMachine } from "./state-machine";
import { GateStore } from "./store";

export class SessionGate extends DurableObject<Env> implements SessionGateApi {
  private readonly store: GateStore;
  private readonly machine: StateMachine;
  private readonly presence: Presence;
  private readonly admission: Admission;
  private readonly sockets: Sockets;
  private readonly agents: SocketAgents;
  /** Dropped sockets whose requests end a moment later or at the next event (closed-sockets.ts). */
  private readonly closedSockets: ClosedSockets;
  private readonly escalation: Escalation;
  /** Stopping and resuming the session (the stop is kept in `meta('stopped')`). */
  private readonly stops: SessionStops;
  private readonly keyCheck: KeyCheckHost;
  /** The outbox to D1 and the audit chain (a field, not exposed over RPC). */
  readonly outbox: Outbox;
  /** News for the team's hub, sent at each change's end (with the outbox's rows when they flush). */
  private readonly mail: HubMail;
  /** Agents that poll over HTTP instead of holding a socket (a field, not exposed over RPC). */
  readonly http: HttpAgents;
  private readonly retention: Retention;
  /** When the one alarm fires next (alarm-clock.ts). */
  private readonly alarmClock: AlarmClock;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    migrate(ctx.storage);
    const store = new GateStore(ctx.storage.sql);
    const hubOf = (teamId: string) => gateHub(env, teamId);
    this.keyCheck = { hub: hubOf, db: env.DB };
    // The hub knows a newer team policy than the session's: from a report's or an admission's answer.
    const newerPolicy = (teamId: string, policy: VersionedPolicy) => this.presence.applyPolicy(teamId, policy);
    this.mail = new HubMail({
      hub: hubOf,
      background: (work) => ctx.waitUntil(work),
      flushOutbox: () => {
        // A failed flush is retried by the alarm, on the backoff's schedule.
        if (this.outbox.flushDue()) void this.outbox.flush().catch(() => this.alarmClock.schedule());
      },
      newerPolicy,
    });
    const hub = (teamId: string, news: GateNews) => this.mail.post(teamId, news);
    this.store = store;
    // The cap on resolved rows (count and bytes): noted at each resolution, enforced by the alarm.
    const cap = new ResolvedCap(ctx.storage.sql);
    this.retention = new Retention({ store, cap, prunedResolved: () => this.escalation.pruneResolved() });
    this.alarmClock = new AlarmClock(ctx.storage, new AlarmBackoff(ctx.storage.sql), (now) => {
      const due = store.pendingDue();
      const heartbeat = due.socketHeld > 0 ? now + HEARTBEAT_INTERVAL_MS : null;
      return [
        due.expiry,
        due.lease,
        heartbeat,
        this.outbox.dueAt(now),
        this.presence.reportDueAt(),
        this.retention.dueAt(now),
        this.escalation.dueAt(),
      ];
    });
    this.sockets = new Sockets(ctx);
    this.outbox = new Outbox(new OutboxStore(ctx.storage.sql), {
      hub: hubOf,
      news: (teamId) => this.mail.take(teamId),
      answered: (teamId, answer) => this.mail.answered(teamId, answer),
      deadLettersChanged: () => this.presence.noteDeadLetters(Date.now()),
    });
    this.machine = new StateMachine({
      store,
      outbox: this.outbox,
      objectId: ctx.id.toString(),
      tellHub: hub,
      deliver: (row, answer) => {
        this.sockets.answer(row.socket_id, row.rpc_id, answer);
        this.http.polls.wake(row.id);
        cap.noteResolved();
      },
      reachable: (row, now) => row.socket_id === "" || this.sockets.heardFrom(row.socket_id, now),
      transaction: (work) => ctx.storage.transactionSync(work),
      quarantine: (row, error, now) => {
        store.quarantine(row.id, String(error).slice(0, 500), now);
        // The id and the kind of error only: a parse error's message quotes the row (tool arguments).
        console.error(`gate: ${row.id} quarantined, its resolution threw (${(error as Error)?.name ?? "error"})`);
        this.presence.noteDeadLetters(now);
      },
      opened: (approval, meta, now) => {
        this.escalation.start(approval, meta, now);
        // The first step runs after this change committed: never awaited on the agent's path.
        ctx.waitUntil(Promise.resolve().then(() => this.escalateDue(now)));
      },
      seenAt: (approvalId, userId) => this.escalation.seenAt(approvalId, userId),
    });
    this.escalation = new Escalation({
      store,
      ladders: new LadderStore(ctx.storage.sql),
      outbox: this.outbox,
      escalate: (teamId, order) => withDeadline(hubOf(teamId).escalate(teamId, order), ALARM_BUDGET_MS, "hub.escalate"),
      notify: (row, progress) => this.sockets.notify(row.socket_id, METHODS.progress, progress),
    });
    this.admission = new Admission({
      machine: this.machine,
      session: () => store.meta(),
      isRevoked: (keyId) => store.isRevoked(keyId),
      hub: hubOf,
      tellHub: hub,
      newerPolicy,
    });
    this.presence = new Presence({ store, outbox: this.outbox, tellHub: hub, connected: () => this.sockets.anyOpen() });
    this.agents = new SocketAgents({
      store,
      machine: this.machine,
      admission: this.admission,
      presence: this.presence,
      sockets: this.sockets,
    });
    this.closedSockets = new ClosedSockets({
      end: (socketIds) => this.agents.endClosed(socketIds, Date.now()),
      later: (ms, change) => {
        ctx.waitUntil(new Promise((resolve) => setTimeout(resolve, ms)).then(() => this.change(change)));
      },
    });
    this.stops = new SessionStops({
      store,
      machine: this.machine,
      outbox: this.outbox,
      report: (now) => this.presence.noteConnection(now),
    });
    this.http = new HttpAgents({
      store,
      machine: this.machine,
      admission: this.admission,
      join: (join) => this.presence.join(join),
      progress: (approvalId) => this.escalation.progress(approvalId),
      hello: (info) => this.presence.hello(info),
    });
    try {
      this.change(() => this.agents.resolveOrphans(Date.now()));
    } catch (error) {
      // A gate that cannot end its orphans now still serves; the alarm's sweep tries again.
      console.error(`gate: orphans not resolved at start (${(error as Error)?.name ?? "error"})`);
    }
  }

  // ── platform handlers ────────────────────────────────────────────────────

  override async fetch(request: Request): Promise<Response> {
    const join = joinOf(request);
    if (!join) return new Response("expected a WebSocket upgrade from the Worker", { status: 400 });
    return this.change(() => this.agents.connect(join));
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    await this.changeAsync(() => this.agents.message(ws, message));
  }

  // A dropped socket's answer reaches nobody: the close is answered now, what it held ends a
  // moment later or at the next event (closed-sockets.ts), so a storm of closes commits spread out.
  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    this.closedSockets.add(this.agents.closed(ws, { code, reason }));
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    this.closedSockets.add(this.agents.closed(ws));
  }

  /** One alarm serves expiry, leases, heartbeat checks, presence reports, outbox retries, escalation and retention. */
  override async alarm(): Promise<void> {
    this.alarmClock.fired();
    try {
      // D1 down is no reason to skip the next alarm: the outbox keeps the rows for the retry.
      // Every wait here is bounded (deadline.ts), and the ladder's climb is started, not awaited:
      // a stuck hub never holds back the next alarm's expiry, lease and heartbeat sweeps.
      await this.changeAsync(async () => {
        const now = Date.now();
        this.sweepDue(now);
        this.ctx.waitUntil(this.escalateDue(now));
        await this.outbox.onAlarm(now).catch(() => undefined);
      });
      this.alarmClock.backoff.succeeded();
    } catch (error) {
      await this.alarmClock.failed(error);
    }
  }

  // ── RPC: the human side ──────────────────────────────────────────────────

  async getApproval(teamId: string, approvalId: string): Promise<Approval | null> {
    await this.admission.settled(approvalId);
    return this.change(() => (this.store.meta()?.teamId === teamId ? this.store.approval(approvalId) : null));
  }

  async decide(d: DecisionInput): Promise<DecisionResult> {
    await this.admission.settled(d.approvalId);
    // A key revoked where this gate was not told yet: its requests end before any allow is claimed.
    const row = this.store.meta()?.teamId === d.teamId ? this.store.row(d.approvalId) : null;
    const revoked = row ? await withdrawnKey(this.keyCheck, d.teamId, row, d) : null;
    if (revoked) await this.revokeKey(d.teamId, revoked);
    return this.change(() => this.machine.decide(d, Date.now()));
  }

  async ruleChoices(teamId: string, approvalId: string, userId: string): Promise<GateRuleChoices | null> {
    await this.admission.settled(approvalId);
    return this.change(() => this.machine.ruleChoices(teamId, approvalId, userId));
  }

  async deliveryChanged(teamId: string, approvalId: string, receipts: DeliveryReceipts): Promise<void> {
    this.change(() => this.escalation.received(teamId, approvalId, receipts, Date.now()));
  }

  async stepUps(teamId: string, approvalId: string) {
    await this.admission.settled(approvalId);
    return this.change(() => {
      const approval = this.store.meta()?.teamId === teamId ? this.store.approval(approvalId) : null;
      return approval && { approval, stepUps: this.store.stepUps(approvalId) };
    });
  }

  async revokeKey(teamId: string, keyId: string): Promise<number> {
    return this.change(() => {
      if (this.store.meta()?.teamId !== teamId) return 0;
      const now = Date.now();
      const denied = this.machine.revokeKey(keyId, now);
      this.agents.closeKey(keyId);
      this.presence.noteConnection(now);
      return denied;
    });
  }

  async stop(teamId: string, input: StopInput): Promise<StopResult | null> {
    return this.change(() => this.stops.stop(teamId, input, Date.now()));
  }

  async resume(teamId: string, by: Owner): Promise<StopResult | null> {
    return this.change(() => this.stops.resume(teamId, by, Date.now()));
  }

  async applyPolicy(teamId: string, update: VersionedPolicy): Promise<boolean> {
    return this.change(() => this.presence.applyPolicy(teamId, update));
  }

  async replayDeadLetters(teamId: string): Promise<ReplayResult | null> {
    if (this.store.meta()?.teamId !== teamId) return null;
    return this.changeAsync(() => this.outbox.replayNow());
  }

  // ── RPC: agents over HTTP ────────────────────────────────────────────────

  async openOverHttp(join: GateJoin, params: AgentAsk, info?: HelloParams): Promise<HttpOpenResult> {
    return this.changeAsync(() => this.http.open(join, params, info));
  }

  async poll(caller: AgentCaller, approvalId: string, waitMs: number): Promise<HttpPollResult> {
    return this.changeAsync(() => this.http.poll(caller, approvalId, waitMs));
  }

  async cancelOverHttp(caller: AgentCaller, approvalId: string): Promise<HttpPollResult> {
    return this.change(() => this.http.cancel(caller, approvalId));
  }

  async disconnectHttp(caller: AgentCaller): Promise<number> {
    return this.change(() => this.http.disconnect(caller));
  }

  // ── time, and the outbox (called by the alarm; public for tests) ─────────

  /**
   * Ends what is due at `now`: expired requests, lapsed leases, silent (half-open) sockets,
   * orphans; and reports the connection state when it changed or a report is due.
   */
  sweep(now: number): void {
    this.change(() => this.sweepDue(now));
  }

  /**
   * Runs the escalation steps due at `now` and waits for the hub's outcomes (the alarm's share;
   * tests run it at a chosen moment, without the heartbeat and lease checks a sweep would do).
   */
  async escalateDue(now: number): Promise<void> {
    return this.changeAsync(() => this.escalation.tick(now));
  }

  /** Hands the outbox to D1 and the audit chain now; rejects when a write failed. */
  async flushOutbox(): Promise<void> {
    return this.changeAsync(() => this.outbox.flush());
  }

  /**
   * Each step in its own storage transaction, and a step that throws stops none of the others
   * (a statement that fails outside one would undo the whole event's writes); the first error
   * is thrown once every step ran, so the alarm backs off.
   */
  private sweepDue(now: number): void {
    const wasConnected = this.sockets.anyOpen();
    const steps = [
      () => this.machine.lapseDue(now),
      () => this.agents.closeSilent(now),
      () => this.agents.resolveOrphans(now),
      () => this.presence.reportIfDue(now, wasConnected),
      () => this.retention.prune(now),
    ];
    const errors = steps.flatMap((step) => {
      try {
        this.machine.atomically(step);
        return [];
      } catch (error) {
        return [error];
      }
    });
    if (errors.length > 0) throw errors[0];
  }

  // ── the post-change step ─────────────────────────────────────────────────

  /**
   * Ends what dropped sockets held (so `work` sees it ended), runs `work`, then the post-change
   * step, whatever `work` did (or threw).
   */
  private change<T>(work: () => T): T {
    try {
      this.closedSockets.endWaiting();
      return work();
    } finally {
      this.afterChange();
    }
  }

  private async changeAsync<T>(work: () => Promise<T>): Promise<T> {
    try {
      this.closedSockets.endWaiting();
      return await work();
    } finally {
      this.afterChange();
    }
  }

  /**
   * After any change: delete what the hub acknowledged (in this change's commit), schedule the
   * next alarm; the outbox and the news go to the hub in the background.
   */
  private afterChange(): void {
    this.outbox.settle();
    this.alarmClock.schedule();
    this.mail.send();
  }
}
