/**
 * The operator's ceiling on what one team stores per day (`MAX_STORED_BYTES_PER_TEAM_PER_DAY`,
 * worker/ceilings.ts): the bytes of the requests the team's quotas admitted since 00:00 UTC,
 * each counted as its gate would store it (the card, its snapshot already cut to the team's
 * `storedBytesPerRequest`). A request that would pass the ceiling is refused until the next day.
 *
 * Like the pending slots (quotas.ts), the count is answered from memory and written after the
 * answer; an instance that dies before the write counts that much low for the rest of the day.
 *
 * Owns: the `quota_days` table and that verdict. Does not own: the ceiling's value (ceilings.ts),
 * the other quotas (quotas.ts).
 */
import type { HubHost } from "./host";

const DAY_MS = 24 * 60 * 60 * 1000;

export class DailyBytes {
  /** Today's count as known in memory (null: read it from storage first). */
  private today: { day: number; bytes: number } | null = null;

  constructor(private readonly host: HubHost) {}

  /** Counts `bytes` into today's total, or says how long until the day's count starts again. */
  take(bytes: number, ceiling: number, now: number): { ok: true } | { ok: false; retryAfterMs: number } {
    const day = Math.floor(now / DAY_MS);
    const today = this.load(day);
    if (today.bytes + bytes > ceiling) return { ok: false, retryAfterMs: (day + 1) * DAY_MS - now };
    today.bytes += bytes;
    return { ok: true };
  }

  /** Stores today's count and forgets earlier days (the quotas' write, after the answers). */
  write(): void {
    if (!this.today) return;
    const { sql } = this.host;
    sql.exec("DELETE FROM quota_days WHERE day < ?", this.today.day);
    sql.exec("INSERT OR REPLACE INTO quota_days (day, bytes) VALUES (?, ?)", this.today.day, this.today.bytes);
  }

  private load(day: number): { day: number; bytes: number } {
    if (this.today?.day === day) return this.today;
    const row = this.host.sql.exec<{ bytes: number }>("SELECT bytes FROM quota_days WHERE day = ?", day).toArray()[0];
    this.today = { day, bytes: row?.bytes ?? 0 };
    return this.today;
  }
}
