/**
 * The SQL of a SessionGate's outbox: the rows still to deliver (`outbox`), the dead letters
 * (`outbox_dead`), the failure streak the alarm retries by (`meta('outbox_backoff')`) and when
 * the dead letters are next replayed (`meta('dead_letter_replay')`).
 *
 * Owns: those statements. Does not own: the schema (migrations.ts) or when to deliver, set
 * aside or replay (outbox.ts). Synchronous, like the storage under it.
 */
import type { OutboxOp } from "../db";

/** The outbox's failures in a row and when the alarm retries (persisted, so a restart or a busy alarm keeps to it). */
export interface OutboxBackoff {
  failures: number;
  retryAt: number;
}

/** When dead letters are next replayed by themselves, and how many replays left some behind so far. */
export interface DeadLetterReplay {
  at: number;
  replays: number;
}

export interface OutboxRow {
  seq: number;
  op: OutboxOp;
  attempts: number;
}

export class OutboxStore {
  constructor(private readonly sql: SqlStorage) {}

  // ── rows to deliver ──────────────────────────────────────────────────────

  enqueue(op: OutboxOp): void {
    this.sql.exec("INSERT INTO outbox (op) VALUES (?)", JSON.stringify(op));
  }

  /** Whether any row is after `after` (the outbox's delivered watermark). */
  waiting(after: number): boolean {
    return this.sql.exec("SELECT 1 FROM outbox WHERE seq > ? LIMIT 1", after).toArray().length > 0;
  }

  /** Rows after `after` (the outbox's delivered watermark). */
  size(after: number): number {
    return this.sql.exec("SELECT COUNT(*) AS n FROM outbox WHERE seq > ?", after).one().n as number;
  }

  /** The oldest rows after `after`, in order: at most `limit` of them and `maxBytes` of JSON (always one). */
  batch(limit: number, maxBytes: number, after: number): OutboxRow[] {
    const rows: OutboxRow[] = [];
    let bytes = 0;
    const cursor = this.sql.exec<{ seq: number; op: string; attempts: number }>(
      "SELECT seq, op, attempts FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?",
      after,
      limit,
    );
    for (const r of cursor) {
      bytes += r.op.length;
      if (rows.length > 0 && bytes > maxBytes) break;
      rows.push({ seq: r.seq, op: JSON.parse(r.op) as OutboxOp, attempts: r.attempts });
    }
    return rows;
  }

  deleteThrough(lastSeq: number): void {
    this.sql.exec("DELETE FROM outbox WHERE seq <= ?", lastSeq);
  }

  /** Counts a failed try against each of these rows (shown with a dead letter). */
  countFailure(seqs: number[]): void {
    for (const seq of seqs) this.sql.exec("UPDATE outbox SET attempts = attempts + 1 WHERE seq = ?", seq);
  }

  /** The outbox's failure streak (`meta('outbox_backoff')`), or null while flushes land. */
  backoff(): OutboxBackoff | null {
    return this.metaJson<OutboxBackoff>("outbox_backoff");
  }

  setBackoff(backoff: OutboxBackoff | null): void {
    this.setMetaJson("outbox_backoff", backoff);
  }

  // ── dead letters ─────────────────────────────────────────────────────────

  /**
   * Moves these rows aside (`outbox_dead`) and keeps at most `kept` dead letters, dropping the
   * oldest; how many were dropped.
   */
  setAside(seqs: number[], now: number, error: string, kept: number): number {
    for (const seq of seqs) {
      this.sql.exec(
        `INSERT OR REPLACE INTO outbox_dead (seq, op, attempts, dead_at, error)
         SELECT seq, op, attempts, ?, ? FROM outbox WHERE seq = ?`,
        now,
        error,
        seq,
      );
      this.sql.exec("DELETE FROM outbox WHERE seq = ?", seq);
    }
    return this.sql
      .exec(
        "DELETE FROM outbox_dead WHERE seq NOT IN (SELECT seq FROM outbox_dead ORDER BY seq DESC LIMIT ?) RETURNING seq",
        kept,
      )
      .toArray().length;
  }

  /** The oldest `limit` dead letters. */
  deadLetters(limit: number): Array<{ seq: number; op: OutboxOp }> {
    return this.sql
      .exec<{ seq: number; op: string }>("SELECT seq, op FROM outbox_dead ORDER BY seq LIMIT ?", limit)
      .toArray()
      .map((r) => ({ seq: r.seq, op: JSON.parse(r.op) as OutboxOp }));
  }

  /** A dead letter that landed on a replay. */
  deadLetterReplayed(seq: number): void {
    this.sql.exec("DELETE FROM outbox_dead WHERE seq = ?", seq);
  }

  /** Drops dead letters set aside before `before`; how many went. */
  pruneDeadLetters(before: number): number {
    return this.sql.exec("DELETE FROM outbox_dead WHERE dead_at < ? RETURNING seq", before).toArray().length;
  }

  /** When the dead letters are next replayed by themselves (`meta('dead_letter_replay')`), or null when none wait. */
  deadLetterReplay(): DeadLetterReplay | null {
    return this.metaJson<DeadLetterReplay>("dead_letter_replay");
  }

  setDeadLetterReplay(replay: DeadLetterReplay | null): void {
    this.setMetaJson("dead_letter_replay", replay);
  }

  deadLetterCount(): number {
    return this.sql.exec("SELECT COUNT(*) AS n FROM outbox_dead").one().n as number;
  }

  private metaJson<T>(key: string): T | null {
    const v = this.sql.exec("SELECT v FROM meta WHERE k = ?", key).toArray()[0]?.v;
    return typeof v === "string" ? (JSON.parse(v) as T) : null;
  }

  private setMetaJson(key: string, value: unknown): void {
    if (value === null) this.sql.exec("DELETE FROM meta WHERE k = ?", key);
    else this.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)", key, JSON.stringify(value));
  }
}
