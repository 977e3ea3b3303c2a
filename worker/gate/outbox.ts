/**
 * The outbox to D1: what a SessionGate must tell D1 (index rows) and its team's audit chain,
 * written after the agent has its answer. Both go to the team's hub in one call, which writes
 * them with the rest of the team's burst in one D1 batch (`hub/audit-writer.ts`, group commit):
 * a storm of resolutions costs the team a few D1 statements, not several per request. The same
 * call carries the news the change queued for the hub (hub.ts `HubMail`), so a decision or a
 * dropped socket costs the hub one call. Rows leave in order, once acknowledged; a retry
 * replays them (never the news), and every row is idempotent.
 *
 * Rows the hub acknowledged are deleted with the next change's own writes (`settle`, from the
 * shell's post-change step), not in a storage commit of their own: one commit fewer per change.
 * The watermark is in memory, so an instance that restarts sends its last acknowledged rows
 * once more, which idempotent rows allow (and AUTOINCREMENT never reuses a `seq`).
 *
 * A hub that does not answer within ALARM_BUDGET_MS fails the flush (`DeadlineExceeded`); the
 * rows are idempotent, so a late answer's writes and the retry's do no harm.
 * A failed flush backs off (5 s doubling to 5 min; the alarm retries). A row that failed
 * DEAD_AFTER flushes in a row is a dead letter: it moves to `outbox_dead` (kept for inspection
 * and a manual replay) instead of blocking the rows behind it and waking the object forever. The session then reports
 * its dead-letter count to the team's hub (with every connection report), for the dashboard.
 *
 * Owns: enqueueing, flushing, backoff, dead letters and the outbox's share of the alarm. Does
 * not own: the alarm itself (the shell) or the SQL (store.ts).
 */
import type { OutboxOp } from "../db";
import { ALARM_BUDGET_MS, withDeadline } from "../deadline";
import type { GateHub, GateNews, GateReportAnswer } from "./hub";
import { DEAD_AFTER, OUTBOX_SAFETY_NET_MS, retryDelayMs } from "./rules";
import type { GateStore } from "./store";

export { DEAD_AFTER };

const BATCH = 50;

/** Where the outbox writes: the team's hub, which writes D1's index and the audit chain. */
export interface OutboxSinks {
  hub(teamId: string): GateHub;
  /** The news queued for the team's hub (taken: the flush carries it). */
  news(teamId: string): GateNews[];
  /** The hub's answer to the news carried. */
  answered(teamId: string, answer: GateReportAnswer): void;
  /** Rows were dead-lettered: the session reports its count, so the dashboard shows it. */
  deadLettered(): void;
}

export class Outbox {
  private flushing: Promise<void> | null = null;
  private flushAgain = false;
  /** Rows up to this `seq` reached the hub; those up to `deleted` are gone from storage too. */
  private delivered = 0;
  private deleted = 0;
  /**
   * The failed flushes of the first row still to deliver (null: none to deliver; undefined: not
   * read yet). Every change asks twice (the alarm's schedule, whether to flush); it moves only
   * when rows are enqueued into an empty outbox, delivered or fail.
   */
  private headAttempts: number | null | undefined;

  constructor(
    private readonly store: GateStore,
    private readonly sinks: OutboxSinks,
  ) {}

  enqueue(op: OutboxOp): void {
    this.store.enqueue(op);
    if (this.headAttempts === null) this.headAttempts = 0;
  }

  /** Rows still to deliver. */
  size(): number {
    return this.store.outboxSize(this.delivered);
  }

  /** The last `seq` the hub acknowledged (rows up to it are only waiting to be deleted). */
  get deliveredThrough(): number {
    return this.delivered;
  }

  /** Deletes the acknowledged rows; the shell calls it in every change, so the delete joins that change's commit. */
  settle(): void {
    if (this.delivered <= this.deleted) return;
    this.store.outboxDelivered(this.delivered);
    this.deleted = this.delivered;
  }

  /**
   * When the alarm must come back for the outbox, or null when it holds nothing: after a failed
   * flush, the backoff's retry; before any, only the safety net (the change flushes at once).
   */
  dueAt(now: number): number | null {
    const failures = this.failuresOfHead();
    if (failures === null) return null;
    return now + (failures === 0 ? OUTBOX_SAFETY_NET_MS : retryDelayMs(failures - 1));
  }

  /**
   * Whether a change should flush now. Not while a failure streak backs off: the alarm retries
   * on the backoff's schedule, so a busy session cannot turn a D1 outage into dead letters.
   */
  flushDue(): boolean {
    return this.failuresOfHead() === 0;
  }

  private failuresOfHead(): number | null {
    if (this.headAttempts === undefined) this.headAttempts = this.store.outboxHeadAttempts(this.delivered);
    return this.headAttempts;
  }

  /** Writes the outbox in order, one flush at a time; rejects when a write failed. */
  flush(): Promise<void> {
    if (this.flushing) {
      this.flushAgain = true;
      return this.flushing;
    }
    this.flushing = (async () => {
      do {
        this.flushAgain = false;
        const rows = this.store.outboxBatch(BATCH, this.delivered);
        const last = rows[rows.length - 1];
        if (!last) break;
        try {
          await this.deliver(rows.map((r) => r.op));
        } catch (error) {
          this.failed(last.seq, error);
          throw error;
        }
        this.delivered = last.seq;
        this.headAttempts = undefined;
        if (rows.length === BATCH) this.flushAgain = true;
      } while (this.flushAgain);
    })().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  /** Hands ops (all of one team: the session's) and the queued news to the team's hub; resolves once D1 has the ops. */
  async deliver(ops: OutboxOp[]): Promise<void> {
    const teamId = ops[0]?.teamId;
    if (!teamId) return;
    const report = this.sinks.hub(teamId).gateReport(teamId, { news: this.sinks.news(teamId), ops });
    const answer = await withDeadline(report, ALARM_BUDGET_MS, "hub.gateReport");
    this.sinks.answered(teamId, answer);
  }

  /** Counts the failure against the rows tried; those that failed DEAD_AFTER times move aside. */
  private failed(lastSeq: number, error: unknown): void {
    // Only rows still to deliver count a failure (and may become dead letters).
    this.settle();
    this.store.outboxFailed(lastSeq);
    this.headAttempts = undefined;
    const dead = this.store.deadLetter(DEAD_AFTER, Date.now(), String(error).slice(0, 500));
    if (dead === 0) return;
    console.error(`outbox: ${dead} row(s) dead-lettered after ${DEAD_AFTER} failed flushes: ${error}`);
    this.sinks.deadLettered();
  }
}
