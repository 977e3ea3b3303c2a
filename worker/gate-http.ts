/**
 * The HTTP side of a SessionGate, for agents that cannot hold a WebSocket. A request is held by
 * a lease that every poll renews instead of by a socket, and long polls wait in memory for the
 * gate's one `resolve()` to end it. Everything else (opening, resolving, the outbox) is the
 * gate's own path, reached through `GateCore`.
 */
import type { RequestPermissionParams, RequestPermissionResponse } from "../sdk/src/protocol";
import type { PendingRow, SessionMeta, StoredRow } from "./gate-storage";
import type { GateJoin, Holder, Refusal, Resolution } from "./session-gate";
import type { Approval, ApprovalState, DecidedBy, ResolutionReason } from "./types";

/** An HTTP-held request not polled for this long is denied `agent_disconnected`. */
export const LEASE_MS = 60_000;
/** The longest a poll may wait: under the 60 s idle timeout of common proxies on the way. */
export const MAX_WAIT_SECONDS = 50;

/** The agent calling over HTTP, from its API key. */
export interface AgentCaller {
  teamId: string;
  userId: string;
  keyId: string;
}

export type HttpOpenResult =
  | { status: 201; body: { approvalId: string; expiresAt: number } }
  | {
      status: 400 | 401 | 429;
      error: "invalid_request" | "key_revoked" | "too_many_pending";
      message: string;
      issues?: unknown[];
    };

/** A final body is itself an ACP RequestPermissionResponse: its `outcome` is what the agent acts on. */
export type HttpPollResult =
  | {
      status: 200;
      body: { approvalId: string; state: ApprovalState; reason: ResolutionReason | null } & Pick<
        RequestPermissionResponse,
        "outcome" | "_meta"
      >;
    }
  | { status: 202; body: { approvalId: string; state: "pending"; expiresAt: number } }
  | { status: 404 };

/** What the HTTP side uses of its gate: the same open and resolve paths sockets use. */
export interface GateCore {
  sql: SqlStorage;
  join(join: GateJoin): SessionMeta | null;
  meta(): SessionMeta | null;
  open(meta: SessionMeta, holder: Holder, params: RequestPermissionParams, now: number): Approval | Refusal;
  resolve(row: PendingRow, r: Resolution, now: number): Approval | null;
  agentAnswer(
    row: PendingRow,
    r: { reason: ResolutionReason | null; optionId?: string | null; decidedBy?: DecidedBy | null },
  ): RequestPermissionResponse;
  afterChange(): void;
}

export class HttpAgents {
  readonly polls = new LongPolls();

  constructor(private readonly gate: GateCore) {}

  open(join: GateJoin, params: RequestPermissionParams): HttpOpenResult {
    const meta = this.gate.join(join);
    if (!meta) return { status: 401, error: "key_revoked", message: "this API key was revoked" };
    const now = Date.now();
    // No socket and no JSON-RPC id: the lease alone keeps it open.
    const holder = { socketId: "", rpcKey: "null", keyId: join.keyId, leaseUntil: now + LEASE_MS };
    const opened = this.gate.open(meta, holder, params, now);
    this.gate.afterChange();
    if (!("refused" in opened)) return { status: 201, body: { approvalId: opened.id, expiresAt: opened.expiresAt } };
    if (opened.refused === "too_many_pending")
      return { status: 429, error: "too_many_pending", message: opened.message };
    return { status: 400, error: "invalid_request", message: opened.message, issues: opened.issues };
  }

  async poll(caller: AgentCaller, approvalId: string, waitMs: number): Promise<HttpPollResult> {
    const row = this.row(caller, approvalId);
    if (!row) return { status: 404 };
    this.renewLease(approvalId, Date.now());
    if (row.state === "pending" && waitMs > 0) {
      await this.polls.wait(approvalId, waitMs);
      // The agent was there all along: its lease runs from the end of the wait.
      this.renewLease(approvalId, Date.now());
    }
    return this.result(approvalId);
  }

  cancel(caller: AgentCaller, approvalId: string): HttpPollResult {
    const row = this.row(caller, approvalId);
    if (!row) return { status: 404 };
    if (row.state === "pending") this.gate.resolve(row, { state: "cancelled", reason: "agent_cancelled" }, Date.now());
    this.gate.afterChange();
    return this.result(approvalId);
  }

  /** Only the session owner's keys see its approvals; to anyone else an id looks unknown. */
  private row(caller: AgentCaller, approvalId: string): StoredRow | null {
    const meta = this.gate.meta();
    if (meta?.teamId !== caller.teamId || meta.ownerUserId !== caller.userId) return null;
    return this.gate.sql.exec<StoredRow>("SELECT * FROM approvals WHERE id = ?", approvalId).toArray()[0] ?? null;
  }

  private renewLease(approvalId: string, now: number): void {
    this.gate.sql.exec(
      "UPDATE approvals SET lease_until = ? WHERE id = ? AND state = 'pending' AND lease_until IS NOT NULL",
      now + LEASE_MS,
      approvalId,
    );
  }

  private result(approvalId: string): HttpPollResult {
    const row = this.gate.sql.exec<StoredRow>("SELECT * FROM approvals WHERE id = ?", approvalId).one();
    const approval = JSON.parse(row.record) as Approval;
    if (approval.state === "pending") {
      return { status: 202, body: { approvalId, state: "pending", expiresAt: approval.expiresAt } };
    }
    // Rows resolved by builds that did not store answers get theirs recomputed.
    const answer = row.answer
      ? (JSON.parse(row.answer) as RequestPermissionResponse)
      : this.gate.agentAnswer(row, approval);
    return {
      status: 200,
      body: {
        approvalId,
        state: approval.state,
        reason: approval.reason,
        outcome: answer.outcome,
        _meta: answer._meta,
      },
    };
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
