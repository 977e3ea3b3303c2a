/**
 * The gate's one alarm, which serves expiry, leases, heartbeat checks while sockets hold
 * requests, presence reports while one is open, outbox retries, the ladder and pruning past
 * retention: set for the earliest time any of them is due, only ever moved earlier (an alarm
 * that fires early just reschedules: one storage write per burst of requests, none on the
 * decision path), and held back while alarms fail (alarm-backoff.ts).
 *
 * Owns: the time this instance set, and setting it. Does not own: when each part is due (each
 * subsystem's `dueAt`, gathered by the shell), the failure count (alarm-backoff.ts) or what the
 * alarm runs (the shell).
 */
import type { AlarmBackoff } from "./alarm-backoff";

export class AlarmClock {
  /** The alarm this instance set; unknown (null) after a restart, so the first schedule sets one. */
  private at: number | null = null;

  constructor(
    private readonly storage: DurableObjectStorage,
    readonly backoff: AlarmBackoff,
    /** The times the parts are due at `now` (null: not due). */
    private readonly dueTimes: (now: number) => Array<number | null>,
  ) {}

  schedule(): void {
    const now = Date.now();
    const candidates = this.dueTimes(now).filter((at) => at !== null);
    if (candidates.length === 0) return;
    const at = this.backoff.floor(Math.min(...candidates));
    if (this.at !== null && this.at > now && this.at <= at) return;
    this.at = at;
    void this.storage.setAlarm(at);
  }

  /** The alarm fired: whatever it was set for is past. */
  fired(): void {
    this.at = null;
  }

  /** The alarm's work threw: the next one waits out the backoff (not rethrown: the runtime would retry at once). */
  async failed(error: unknown): Promise<void> {
    const retryAt = this.backoff.failed(Date.now());
    console.error(`gate: alarm failed ${this.backoff.failures} time(s) in a row (${(error as Error)?.name})`);
    this.at = retryAt;
    await this.storage.setAlarm(retryAt);
  }
}
