/**
 * Turns for the gates' reports: a team's hub starts at most REPORTS_PER_TURN of them per turn of
 * its event loop, and the rest wait for the next turn, after the hub has yielded (a timer), so
 * what else it is asked meanwhile (an agent's admission, a dashboard joining the live feed, a
 * decision's claim) is answered between turns instead of behind a storm of a thousand dropped
 * sockets. The first report of a quiet hub starts at once: a single decision waits for nothing.
 * Reports start in the order they came, so one session's news is never reordered.
 *
 * Locally the Worker, every SessionGate and the hub share one thread, whose event loop reads new
 * connections only between runs of queued work: the yield is also what lets the service's other
 * requests in during a storm (docs/capacity.md).
 *
 * Owns: the budget per turn and the queue of reports waiting for a turn. Does not own: what a
 * report does (`gate-report.ts`) or how long it takes after it started (the audit writer's group
 * commit takes whatever reports reach it together).
 */

/** How many gate reports the hub starts per turn of its event loop. */
export const REPORTS_PER_TURN = 4;

/** Runs `next` after the hub yielded to its other work (a timer; tests pass their own). */
export type YieldTurn = (next: () => void) => void;

const yieldToTimer: YieldTurn = (next) => void setTimeout(next, 0);

export class ReportTurns {
  private readonly waiting: Array<() => void> = [];
  /** Reports started in the current turn; null while no turn is running (the hub is quiet). */
  private started: number | null = null;

  constructor(
    private readonly perTurn = REPORTS_PER_TURN,
    private readonly yieldTurn: YieldTurn = yieldToTimer,
  ) {}

  /** Resolves when the report may start: now while this turn has room, else at a later turn. */
  take(): Promise<void> {
    if (this.started === null) this.beginTurn();
    if (this.waiting.length === 0 && (this.started as number) < this.perTurn) {
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
    this.yieldTurn(() => this.nextTurn());
  }

  /** A new turn: the oldest waiting reports start; the turns end once a turn starts none. */
  private nextTurn(): void {
    const starting = this.waiting.splice(0, this.perTurn);
    if (starting.length === 0) {
      this.started = null;
      return;
    }
    this.beginTurn();
    this.started = starting.length;
    for (const start of starting) start();
  }
}
