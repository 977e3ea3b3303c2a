/**
 * Dropped sockets whose requests are not ended yet. A dropped socket's agent already answered
 * itself fail-closed (the SDK denies on a lost connection), so nobody waits for the gate to record
 * the end: the close is answered at once, and the ends are recorded at a random moment between
 * CLOSE_FLOOR_MS and CLOSE_SPREAD_MS later, or at the gate's next event, whichever comes first. A
 * thousand sockets dropped at once so do not put a thousand storage commits in front of
 * everything else the runtime serves (docs/capacity.md, "Where a close's time goes"). No one can
 * tell: every handler ends the waiting closes before its own work, so a decision, a read, a
 * reconnect or the alarm finds the requests ended (`agent_disconnected`) as if it had been
 * recorded at the close. A gate that goes away first ends them at its next start, as orphans
 * (`service_restart`), as does a failure to end them; its alarm is set while a socket holds a request.
 *
 * Owns: which closed sockets wait, and the one timer. Does not own: what a close ends
 * (socket-agents.ts) or the change around it (the shell).
 */

/** The most a dropped socket's ends wait for their moment. */
export const CLOSE_SPREAD_MS = 2_000;
/** The least: closes that arrive together are all answered before any of their ends is written. */
export const CLOSE_FLOOR_MS = 300;

export interface ClosedSocketsHost {
  /** Ends what the sockets held, inside a change. */
  end: (socketIds: string[]) => void;
  /** Runs a change after `ms` (the gate's own timer). */
  later: (ms: number, change: () => void) => void;
}

export class ClosedSockets {
  private readonly waiting = new Set<string>();
  private timerSet = false;

  constructor(
    private readonly host: ClosedSocketsHost,
    private readonly random: () => number = Math.random,
  ) {}

  /** A socket closed: its ends wait for the timer (one per gate, set by the first close) or the next event. */
  add(socketId: string): void {
    this.waiting.add(socketId);
    if (this.timerSet) return;
    this.timerSet = true;
    this.host.later(CLOSE_FLOOR_MS + this.random() * (CLOSE_SPREAD_MS - CLOSE_FLOOR_MS), () => {
      this.timerSet = false;
      this.endWaiting();
    });
  }

  /** Ends what every waiting socket held; called first by every handler. */
  endWaiting(): void {
    if (this.waiting.size === 0) return;
    const socketIds = [...this.waiting];
    this.waiting.clear();
    try {
      this.host.end(socketIds);
    } catch (error) {
      // Not the next handler's failure: the alarm's orphan sweep ends what these sockets held.
      console.error(`gate: closed sockets not ended (${(error as Error)?.name ?? "error"})`);
    }
  }
}
