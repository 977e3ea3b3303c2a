/**
 * The HTTP side of a SessionGate, for agents that cannot hold a WebSocket. A request is held by
 * a lease that every poll renews instead of by a socket, and long polls wait in memory for the
 * state machine's one `resolve()` to end it.
 *
 * Owns: leases, long polls and the HTTP results. Does not own: opening and resolving (the state
 * machine, after admission.ts), joining (presence.ts) or the post-change step (the shell).
 */
import type { Approval } from "../../sdk/src/approval";
import type { AgentAnswer, AgentAsk, CreateElicitationResponse } from "../../sdk/src/elicitation-protocol";
import type { HelloParams, Progress, RequestPermissionResponse } from "../../sdk/src/protocol";
import type { Admission } from "./admission";
import type { AgentCaller, GateJoin, HttpOpenResult, HttpPollResult } from "./api";
import type { JoinRefusal } from "./presence";
import { LEASE_MS } from "./rules";
import type { StateMachine } from "./state-machine";
import type { GateStore, ServedSession, StoredRow } from "./store";

/** What the HTTP side uses of its gate: the same join, open and resolve paths sockets use. */
export interface HttpHost {
  store: GateStore;
  machine: StateMachine;
  admission: Admission;
  join(join: GateJoin): ServedSession | JoinRefusal;
  /** Where a pending request stands (escalation.ts), for the `202` body. */
  progress(approvalId: string): Progress | null;
  /** What the session is, as a socket's hello would say. */
  hello(info: HelloParams): void;
}

export class HttpAgents {
  readonly polls = new LongPolls();

  constructor(private readonly gate: HttpHost) {}

  async open(join: GateJoin, params: AgentAsk, info?: HelloParams): Promise<HttpOpenResult> {
    const meta = this.gate.join(join);
    if ("refused" in meta) return { ok: false, error: meta.refused, message: meta.message };
    if (info) this.gate.hello(info);
    const now = Date.now();
    // No socket and no JSON-RPC id: the lease alone keeps it open.
    const holder = { socketId: "", rpcKey: "null", keyId: join.keyId, leaseUntil: now + LEASE_MS };
    const opened = await this.gate.admission.open(meta, holder, params, now);
    if (!("refused" in opened)) return { ok: true, approvalId: opened.id, expiresAt: opened.expiresAt };
    switch (opened.refused) {
      case "too_many_pending":
        return { ok: false, error: "too_many_pending", message: opened.message };
      case "quota": {
        const { message, limit, retryAfterMs } = opened;
        return { ok: false, error: "quota_exceeded", message, limit, retryAfterMs };
      }
      case "quota_unavailable":
        return { ok: false, error: "quota_unavailable", message: opened.message, retryAfterMs: opened.retryAfterMs };
      case "key_revoked":
        return { ok: false, error: "key_revoked", message: opened.message };
      case "session_stopped":
        return { ok: false, error: "session_stopped", message: opened.message, stopped: opened.stopped };
      case "not_held":
        return { ok: false, error: "internal_error", message: opened.message };
      case "holder_gone":
      case "invalid_params":
        return {
          ok: false,
          error: "invalid_request",
          message: opened.message,
          issues: "issues" in opened ? opened.issues : undefined,
          ...("reason" in opened && opened.reason && { reason: opened.reason }),
        };
    }
  }

  async poll(caller: AgentCaller, approvalId: string, waitMs: number): Promise<HttpPollResult> {
    const row = this.row(caller, approvalId);
    if (!row) return { ok: false, error: "not_found" };
    this.gate.store.renewLease(approvalId, Date.now() + LEASE_MS);
    if (row.state === "pending" && waitMs > 0) {
      await this.polls.wait(approvalId, waitMs);
      // The agent was there all along: its lease runs from the end of the wait.
      this.gate.store.renewLease(approvalId, Date.now() + LEASE_MS);
    }
    return this.result(approvalId);
  }

  cancel(caller: AgentCaller, approvalId: string): HttpPollResult {
    const row = this.row(caller, approvalId);
    if (!row) return { ok: false, error: "not_found" };
    if (row.state === "pending") {
      this.gate.machine.resolve(row, { state: "cancelled", reason: "agent_cancelled" }, Date.now());
    }
    return this.result(approvalId);
  }

  /**
   * The agent's HTTP session closed (an MCP client's `DELETE`): every request held here by a
   * lease ends `agent_disconnected` now, not when its lease lapses; how many. Socket-held ones stay.
   */
  disconnect(caller: AgentCaller): number {
    const meta = this.gate.store.meta();
    if (meta?.teamId !== caller.teamId || meta.ownerUserId !== caller.userId) return 0;
    const rows = this.gate.store.pendingOnSocket("");
    this.gate.machine.resolveAll(rows, { state: "denied", reason: "agent_disconnected" }, Date.now());
    return rows.length;
  }

  /** Only the session owner's keys see its approvals; to anyone else an id looks unknown. */
  private row(caller: AgentCaller, approvalId: string): StoredRow | null {
    const meta = this.gate.store.meta();
    if (meta?.teamId !== caller.teamId || meta.ownerUserId !== caller.userId) return null;
    return this.gate.store.row(approvalId);
  }

  private result(approvalId: string): HttpPollResult {
    const row = this.gate.store.row(approvalId) as StoredRow;
    const approval = JSON.parse(row.record) as Approval;
    if (approval.state === "pending") {
      const progress = this.gate.progress(approvalId);
      const body = { approvalId, state: "pending" as const, expiresAt: approval.expiresAt };
      return { ok: true, body: progress ? { ...body, progress } : body };
    }
    // Rows resolved by builds that did not store answers get theirs recomputed.
    const answer = row.answer ? (JSON.parse(row.answer) as AgentAnswer) : this.gate.machine.answerFor(row, approval);
    const { state, reason } = approval;
    // The final body is the ACP result itself: `outcome` for a permission, `action` (and `content`) for an elicitation.
    if (approval.type === "elicitation") {
      const { action, content, _meta } = answer as CreateElicitationResponse;
      return { ok: true, body: { approvalId, state, reason, action, ...(content ? { content } : {}), _meta } };
    }
    const { outcome, _meta } = answer as RequestPermissionResponse;
    return { ok: true, body: { approvalId, state, reason, outcome, _meta } };
  }
}

/**
 * Long polls waiting for an approval to resolve. Each waiter leaves the map exactly once,
 * woken or timed out, so none outlives its poll.
 */
export class LongPolls {
  private readonly byId = new Map<string, Set<() => void>>();

  /** Resolves when `wake(approvalId)` is called or after `ms`, whichever comes first. */
  wait(approvalId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const waiters = this.byId.get(approvalId) ?? new Set();
      this.byId.set(approvalId, waiters);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0) this.byId.delete(approvalId);
        resolve();
      };
      const timer = setTimeout(done, ms);
      waiters.add(done);
    });
  }

  wake(approvalId: string): void {
    for (const done of [...(this.byId.get(approvalId) ?? [])]) done();
  }

  /** How many approvals have polls waiting. */
  get size(): number {
    return this.byId.size;
  }
}
