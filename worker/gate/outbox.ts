/**
 * The outbox to D1: what a SessionGate must tell D1 (index rows) and its team's audit chain,
 * written after the agent has its answer. Both go to the team's hub in one call, which writes
 * them with the rest of the team's burst in one D1 batch (`hub/audit-writer.ts`, group commit):
 * a storm of resolutions costs the team a few D1 statements, not several per request. The same
 * call carries the news the change queued for the hub (hub.ts `HubMail`), so a decision or a
 * dropped socket costs the hub one call. Rows leave in order, once acknowledged; a retry
 * replays them (never the news: the hub takes a replayed approval row that ended a request as
 * that end's news, `hub/gate-report.ts`), and every row is idempotent.
 *
 * Rows the hub acknowledged are deleted with the next change's own writes (`settle`, from the
 * shell's post-change step), not in a storage commit of their own: one commit fewer per change.
 * The watermark is in memory, so an instance that restarts sends its last acknowledged rows
 * once more, which idempotent rows allow (and AUTOINCREMENT never reuses a `seq`).
 *
 * A failed flush backs off (5 s doubling to 5 min) by a persisted retry time (`meta('outbox_backoff')`):
 * changes do not flush meanwhile, and the alarm flushes only once that time has passed, however
 * often it wakes for other work. A failure is never counted against a row by itself: D1 or the hub
 * being down (or slow) is no row's fault, however long it lasts. After a batch fails (and on each
 * retry of a streak), rows go one by one until one lands; a row that fails alone while a row
 * behind it (at most ALONE_PROBES behind) lands is its own fault, and only it is set aside
 * (`outbox_dead`, a dead letter), so it blocks nothing. When the row and the rows tried behind it
 * all fail alone, it is an outage: nothing is set aside. Once a row lands, batches resume.
 * A hub that does not answer within ALARM_BUDGET_MS fails the flush (`DeadlineExceeded`), as an outage
 * does; the rows are idempotent, so a late answer's writes and the retry's do no harm.
 *
 * Dead letters are replayed, each alone, after the next flush that lands (then 1 min doubling to
 * 6 h while some keep failing; the alarm comes for it), and at once on demand
 * (`POST /v1/sessions/:id/replay`). One that lands leaves `outbox_dead`. At most 1 000 are kept,
 * each at most 30 days. The session reports its count to the team's hub whenever it changes.
 *
 * Owns: enqueueing, flushing, backoff, setting aside and replaying dead letters, and the outbox's
 * share of the alarm. Does not own: the alarm itself (the shell) or the SQL (outbox-store.ts).
 */
import type { OutboxOp } from "../db";
import { ALARM_BUDGET_MS, withDeadline } from "../deadline";
import type { GateHub, GateNews, GateReportAnswer } from "./hub";
import type { DeadLetterReplay, OutboxBackoff, OutboxRow, OutboxStore } from "./outbox-store";
import {
  ALONE_PROBES,
  DEAD_LETTER_KEEP_MS,
  DEAD_LETTERS_KEPT,
  OUTBOX_SAFETY_NET_MS,
  replayDelayMs,
  retryDelayMs,
} from "./rules";

/** The most rows, and bytes of them, one flush hands the hub in one call. */
const BATCH = 50;
const BATCH_BYTES = 512 * 1024;
/** The most dead letters one replay tries (each alone). */
const REPLAY_BATCH = 20;

/** Where the outbox writes: the team's hub, which writes D1's index and the audit chain. */
export interface OutboxSinks {
  hub(teamId: string): GateHub;
  /** The news queued for the team's hub (taken: the flush carries it). */
  news(teamId: string): GateNews[];
  /** The hub's answer to the news carried. */
  answered(teamId: string, answer: GateReportAnswer): void;
  /** The dead-letter count changed: the session reports it, so the dashboard shows it. */
  deadLettersChanged(): void;
}

/** What a replay on demand did: how many dead letters landed, and how many are left. */
export interface ReplayResult {
  replayed: number;
  deadLetters: number;
}

export class Outbox {
  private flushing: Promise<void> | null = null;
  private flushAgain = false;
  /** Rows up to this `seq` reached the hub; those up to `deleted` are gone from storage too. */
  private delivered = 0;
  private deleted = 0;
  /**
   * Read once, then kept with every write (undefined: not read yet): every change asks (the
   * alarm's schedule, whether to flush), and these move only when rows come, land or fail.
   */
  private backoff: OutboxBackoff | null | undefined;
  private waiting: boolean | undefined;
  private replayAt: DeadLetterReplay | null | undefined;
  /** A replay on demand runs with the next pass of the flush, due or not. */
  private replayWanted = false;
  private replayedTotal = 0;

  constructor(
    private readonly store: OutboxStore,
    private readonly sinks: OutboxSinks,
  ) {}

  enqueue(op: OutboxOp): void {
    this.store.enqueue(op);
    this.waiting = true;
  }

  /** Rows still to deliver. */
  size(): number {
    return this.store.size(this.delivered);
  }

  /** The last `seq` the hub acknowledged (rows up to it are only waiting to be deleted). */
  get deliveredThrough(): number {
    return this.delivered;
  }

  deadLetterCount(): number {
    return this.store.deadLetterCount();
  }

  /** Deletes the acknowledged rows; the shell calls it in every change, so the delete joins that change's commit. */
  settle(): void {
    if (this.delivered <= this.deleted) return;
    this.store.deleteThrough(this.delivered);
    this.deleted = this.delivered;
  }

  /**
   * When the alarm must come back for the outbox, or null when it holds nothing: while a failure
   * streak backs off, its persisted retry time; otherwise the safety net for rows (the change
   * flushes at once) and the dead letters' next replay.
   */
  dueAt(now: number): number | null {
    const backoff = this.streak();
    if (backoff) return backoff.retryAt;
    const times = [this.rowsWaiting() ? now + OUTBOX_SAFETY_NET_MS : null, this.replayState()?.at ?? null];
    const due = times.filter((t) => t !== null);
    return due.length > 0 ? Math.min(...due) : null;
  }

  /**
   * Whether a change should flush now. Not while a failure streak backs off: the alarm retries
   * on the backoff's schedule, so a busy session cannot hammer a D1 that is down.
   */
  flushDue(): boolean {
    return this.streak() === null && this.rowsWaiting();
  }

  /**
   * The alarm's share: a flush once the persisted retry time has passed (or, with no failure
   * streak, for rows a change did not deliver), and the dead letters' replay when it is due.
   * An alarm that woke for other work before the retry time does nothing here.
   */
  async onAlarm(now: number): Promise<void> {
    if (this.replayState() && this.store.pruneDeadLetters(now - DEAD_LETTER_KEEP_MS) > 0) this.deadLettersMoved();
    const backoff = this.streak();
    if (backoff && backoff.retryAt > now) return;
    if (backoff || this.rowsWaiting() || this.replayDue(now)) {
      this.replayWanted ||= this.replayDue(now);
      await this.flush();
    }
  }

  /** Delivers what waits, then replays every dead letter now (the Sessions screen's button). */
  async replayNow(): Promise<ReplayResult> {
    const before = this.replayedTotal;
    this.replayWanted = true;
    await this.flush().catch(() => undefined);
    return { replayed: this.replayedTotal - before, deadLetters: this.store.deadLetterCount() };
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
        const landed = await this.deliverAll();
        if (this.replayWanted || (landed && this.replayDue(Date.now()))) await this.replay(Date.now());
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

  /** Every row still to deliver, batch by batch; whether any landed. Rejects (backing off) when they could not. */
  private async deliverAll(): Promise<boolean> {
    let landed = false;
    for (;;) {
      const rows = this.store.batch(BATCH, BATCH_BYTES, this.delivered);
      if (rows.length === 0) return landed;
      try {
        await this.deliverBatch(rows);
      } catch (error) {
        this.failed(error);
        throw error;
      }
      landed = true;
      this.waiting = undefined;
      if (this.streak() !== null) this.setStreak(null);
    }
  }

  /** A batch in one call; after it failed (or while a failure streak lasts), its rows one by one. */
  private async deliverBatch(rows: OutboxRow[]): Promise<void> {
    const last = rows[rows.length - 1] as OutboxRow;
    if (rows.length > 1 && this.streak() === null) {
      try {
        await this.deliver(rows.map((r) => r.op));
        this.delivered = last.seq;
        return;
      } catch {
        // One of the rows, or an outage: going one by one tells which.
      }
    }
    await this.oneByOne(rows);
  }

  /**
   * Rows alone, in order, until one lands: the rows before it that failed alone are set aside,
   * and the rest go in batches again (after an outage, the first row that lands ends it). When
   * the row and ALONE_PROBES rows behind it all fail (or no row is left behind it), it is an
   * outage: nothing is set aside, the failure is thrown.
   */
  private async oneByOne(rows: OutboxRow[]): Promise<void> {
    const failedAlone: OutboxRow[] = [];
    let error: unknown;
    for (const row of rows) {
      try {
        await this.deliver([row.op]);
      } catch (e) {
        error = e;
        failedAlone.push(row);
        if (failedAlone.length > ALONE_PROBES) break;
        continue;
      }
      if (failedAlone.length > 0) this.setAside(failedAlone, error);
      this.delivered = row.seq;
      return;
    }
    this.store.countFailure(failedAlone.map((r) => r.seq));
    throw error;
  }

  /** A failed flush: the streak grows and the alarm retries at its persisted time. Rows stay. */
  private failed(error: unknown): void {
    // Only rows still to deliver stay in the table.
    this.settle();
    const failures = (this.streak()?.failures ?? 0) + 1;
    const retryAt = Date.now() + retryDelayMs(failures - 1);
    this.setStreak({ failures, retryAt });
    console.warn(
      `outbox: flush failed (${failures} in a row), retried at ${new Date(retryAt).toISOString()}: ${error}`,
    );
  }

  /** Rows that failed alone while a row behind them landed: moved to `outbox_dead`, replayed after this flush. */
  private setAside(rows: OutboxRow[], error: unknown): void {
    this.settle();
    const now = Date.now();
    const dropped = this.store.setAside(
      rows.map((r) => r.seq),
      now,
      String(error).slice(0, 500),
      DEAD_LETTERS_KEPT,
    );
    console.error(`outbox: ${rows.length} row(s) failed alone while the next landed, set aside: ${error}`);
    if (dropped > 0) console.error(`outbox: ${dropped} oldest dead letter(s) dropped (at most ${DEAD_LETTERS_KEPT})`);
    this.setReplay({ at: now, replays: 0 });
    this.deadLettersMoved();
  }

  /** Dead letters again, each alone, oldest first; those that land leave `outbox_dead`. */
  private async replay(now: number): Promise<void> {
    this.replayWanted = false;
    const dead = this.store.deadLetters(REPLAY_BATCH);
    let replayed = 0;
    for (const letter of dead) {
      try {
        await this.deliver([letter.op]);
      } catch {
        continue;
      }
      this.store.deadLetterReplayed(letter.seq);
      replayed++;
    }
    this.replayedTotal += replayed;
    const left = this.store.deadLetterCount();
    const replays = this.replayState()?.replays ?? 0;
    // All of this page landed: the rest are due at once; some failed again: they wait longer.
    if (left === 0) this.setReplay(null);
    else if (replayed === dead.length) this.setReplay({ at: now, replays });
    else this.setReplay({ at: now + replayDelayMs(replays), replays: replays + 1 });
    if (replayed > 0) this.deadLettersMoved();
  }

  private deadLettersMoved(): void {
    if (this.store.deadLetterCount() === 0) this.setReplay(null);
    this.sinks.deadLettersChanged();
  }

  private replayDue(now: number): boolean {
    const replay = this.replayState();
    return replay !== null && replay.at <= now;
  }

  private streak(): OutboxBackoff | null {
    if (this.backoff === undefined) this.backoff = this.store.backoff();
    return this.backoff;
  }

  private setStreak(backoff: OutboxBackoff | null): void {
    this.store.setBackoff(backoff);
    this.backoff = backoff;
  }

  private rowsWaiting(): boolean {
    if (this.waiting === undefined) this.waiting = this.store.waiting(this.delivered);
    return this.waiting;
  }

  private replayState(): DeadLetterReplay | null {
    if (this.replayAt === undefined) this.replayAt = this.store.deadLetterReplay();
    return this.replayAt;
  }

  private setReplay(replay: DeadLetterReplay | null): void {
    this.store.setDeadLetterReplay(replay);
    this.replayAt = replay;
  }
}
