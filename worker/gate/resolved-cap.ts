/**
 * The cap on a gate's resolved rows, by count and by bytes: retention by time alone
 * (`limits.retentionDays`, up to 3,650 days) would let one busy session fill its object. Past
 * either bound the oldest resolved rows go first (by expiry), never a pending row (quarantined
 * ones included) and never a row the outbox still carries to D1.
 *
 * Owns: the bounds, when to check them, and the pruning statement. Does not own: pruning by
 * time (store.ts `pruneResolvedBefore`), the alarm that runs it (the shell) or the ladders of
 * pruned rows (escalation.ts `pruneResolved`).
 */

/** The most resolved rows a gate keeps. */
export const RESOLVED_ROWS_MAX = 10_000;
/** The most bytes of resolved rows (record, options, answer, step-ups) a gate keeps. */
export const RESOLVED_BYTES_MAX = 100 * 1024 * 1024;
/** Resolutions between two checks of the cap: each check reads one index, never a row. */
export const CAP_CHECK_EVERY = 100;

export interface CapBounds {
  rows: number;
  bytes: number;
}

export class ResolvedCap {
  /** Resolutions since the last check. */
  private sinceCheck = 0;
  /** Whether this instance checked yet: its first alarm does (rows kept before a restart count too). */
  private checked = false;

  constructor(
    private readonly sql: SqlStorage,
    private readonly bounds: CapBounds = { rows: RESOLVED_ROWS_MAX, bytes: RESOLVED_BYTES_MAX },
  ) {}

  /** A row was resolved. */
  noteResolved(): void {
    this.sinceCheck++;
  }

  /** Whether enough rows were resolved since the last check that an alarm should come now to check. */
  pressing(): boolean {
    return this.sinceCheck >= CAP_CHECK_EVERY;
  }

  /** Whether an alarm that runs now checks the cap. */
  due(): boolean {
    return !this.checked || this.pressing();
  }

  /**
   * Deletes the oldest resolved rows beyond the bounds (newest first, a row is kept while both
   * the rows and the bytes kept so far fit); how many went. Rows the outbox still carries stay.
   */
  enforce(): number {
    this.sinceCheck = 0;
    this.checked = true;
    return this.sql
      .exec(
        `DELETE FROM approvals WHERE rowid IN (
           SELECT rowid FROM (
             SELECT rowid, ROW_NUMBER() OVER newest AS n, SUM(bytes) OVER newest AS kept
               FROM approvals WHERE state IN ('allowed', 'denied', 'cancelled', 'expired')
               WINDOW newest AS (ORDER BY expires_at DESC, rowid DESC))
            WHERE n > ? OR kept > ?)
         AND id NOT IN (SELECT json_extract(op, '$.approval.id') FROM outbox WHERE json_extract(op, '$.op') = 'approval')
         RETURNING id`,
        this.bounds.rows,
        this.bounds.bytes,
      )
      .toArray().length;
  }
}
