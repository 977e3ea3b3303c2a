/**
 * The gate's alarm when it fails: an alarm whose work throws is retried on a backoff (5 s
 * doubling to 5 min, the outbox's schedule) instead of at once, and the count of failures in a
 * row is kept in storage, so a restart does not reset it into a tight loop. The first alarm
 * that succeeds clears it.
 *
 * Owns: the failure count, the earliest time the next alarm may run. Does not own: what the
 * alarm does or when it is otherwise due (alarm-clock.ts).
 */
import { retryDelayMs } from "./rules";

const FAILURES_KEY = "alarm_failures";
const RETRY_AT_KEY = "alarm_retry_at";

export class AlarmBackoff {
  /** Failures in a row and the time before which no alarm runs (read once per instance). */
  private state: { failures: number; retryAt: number } | undefined;

  constructor(private readonly sql: SqlStorage) {}

  /** Failed alarms in a row (0 when the last one succeeded). */
  get failures(): number {
    return this.read().failures;
  }

  /** The earliest time the next alarm may be set for: `at`, or later while alarms fail. */
  floor(at: number): number {
    const { failures, retryAt } = this.read();
    return failures > 0 ? Math.max(at, retryAt) : at;
  }

  /** An alarm failed at `now`: the next one waits; when it may run. */
  failed(now: number): number {
    const failures = this.read().failures + 1;
    const retryAt = now + retryDelayMs(failures - 1);
    this.write({ failures, retryAt });
    return retryAt;
  }

  /** An alarm succeeded: the backoff is over (no write when there was none). */
  succeeded(): void {
    if (this.read().failures > 0) this.write({ failures: 0, retryAt: 0 });
  }

  private read(): { failures: number; retryAt: number } {
    if (!this.state) {
      const rows = this.sql
        .exec<{ k: string; v: string }>("SELECT k, v FROM meta WHERE k IN (?, ?)", FAILURES_KEY, RETRY_AT_KEY)
        .toArray();
      const value = (k: string) => Number(rows.find((r) => r.k === k)?.v ?? 0);
      this.state = { failures: value(FAILURES_KEY), retryAt: value(RETRY_AT_KEY) };
    }
    return this.state;
  }

  private write(state: { failures: number; retryAt: number }): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?), (?, ?)",
      FAILURES_KEY,
      String(state.failures),
      RETRY_AT_KEY,
      String(state.retryAt),
    );
    this.state = state;
  }
}
