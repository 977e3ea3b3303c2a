/**
 * Turns for the gates' reports: a team's hub starts only so many of them per turn of its event
 * loop, and the rest wait for the next turn, after the hub has yielded (a timer), so what else it
 * is asked meanwhile (an agent's admission, a dashboard joining the live feed, a decision's
 * claim) is answered between turns instead of behind a storm of a thousand dropped sockets. The
 * first report of a quiet hub starts at once: a single decision waits for nothing. Reports start
 * in the order they came, so one session's news is never reordered.
 *
 * How many per turn follows what the yield cost: when the timer fired at once, nothing else was
 * waiting, and the next turn takes twice as many (up to REPORTS_PER_TURN_MAX), so a backlog
 * drains at the speed of the work, not of the timer; when it fired late, other work ran in
 * between and the next turn takes REPORTS_PER_TURN again.
 *
 * Locally the Worker, every SessionGate and the hub share one thread, whose event loop reads new
 * connections only between runs of queued work: the yield is also what lets the service's other
 * requests in during a storm (docs/capacity.md).
 *
 * Owns: the budget per turn and the queue of reports waiting for a turn. Does not own: what a
 * report does (`gate-report.ts`) or how long it takes after it started (the audit writer's group
 * commit takes whatever reports reach it together).
 */

/** How many gate reports a turn starts while other work is waiting for the hub. */
export const REPORTS_PER_TURN = 4;
/** The most a turn starts when the hub has nothing else to do. */
export const REPORTS_PER_TURN_MAX = 64;
/** A yield that came back within this long found nothing else waiting. */
export const QUIET_YIELD_MS = 2;

/** Runs `next` after the hub yielded to its other work (a timer; tests pass their own). */
export type YieldTurn = (next: () => void) => void;

const yieldToTimer: YieldTurn = (next) => void setTimeout(next, 0);

export class ReportTurns {
  private readonly waiting: Array<() => void> = [];
  /** Reports started in the current turn; null while no turn is running (the hub is quiet). */
  private started: number | null = null;
  private budget = REPORTS_PER_TURN;
  private yieldedAt = 0;

  constructor(
    private readonly yieldTurn: YieldTurn = yieldToTimer,
    private readonly now: () => number = Date.now,
  ) {}

  /** Resolves when the report may start: now while this turn has room, else at a later turn. */
  take(): Promise<void> {
    if (this.started === null) {
      this.budget = REPORTS_PER_TURN;
      this.beginTurn();
    }
    if (this.waiting.length === 0 && (this.started as number) < this.budget) {
      this.started = (this.started as number) + 1;
      return Promise.resolve();
    }
    return new Promise((start) => this.waiting.push(start));
  }

  /** Reports waiting for a turn (tests read it). */
  get backlog(): number {
    return this.waiting.length;
  }

  private beginTurn(): void {
    this.started = 0;
    this.yieldedAt = this.now();
    this.yieldTurn(() => this.nextTurn());
  }

  /** A new turn: the oldest waiting reports start; the turns end once a turn starts none. */
  private nextTurn(): void {
    const quiet = this.now() - this.yieldedAt <= QUIET_YIELD_MS;
    this.budget = quiet ? Math.min(this.budget * 2, REPORTS_PER_TURN_MAX) : REPORTS_PER_TURN;
    const starting = this.waiting.splice(0, this.budget);
    if (starting.length === 0) {
      this.started = null;
      return;
    }
    this.beginTurn();
    this.started = starting.length;
    for (const start of starting) start();
  }
}
