/**
 * The SQL of the gate's `ladders` table: one row per request opened with an escalation ladder
 * (its steps as opened, what fired, the hub's latest receipts, the last progress the agent got,
 * and when the ladder must next be looked at).
 *
 * Owns: the statements on `ladders` (schema in `migrations.ts`). Does not own: what they mean
 * (`escalation.ts`, `escalation-rules.ts`). Kept apart from `store.ts` so the ladder's storage
 * travels with the ladder.
 */
import type { DeliveryReceipts } from "./api";
import type { Ladder } from "./escalation-rules";

export interface LadderRow {
  approvalId: string;
  ladder: Ladder;
  receipts: DeliveryReceipts;
  /** The last progress sent to the agent (JSON), so only changes are sent. */
  progress: string | null;
}

export class LadderStore {
  constructor(private readonly sql: SqlStorage) {}

  insert(approvalId: string, ladder: Ladder, receipts: DeliveryReceipts, nextAt: number | null): void {
    this.sql.exec(
      "INSERT OR IGNORE INTO ladders (approval_id, ladder, receipts, next_at) VALUES (?, ?, ?, ?)",
      approvalId,
      JSON.stringify(ladder),
      JSON.stringify(receipts),
      nextAt,
    );
  }

  get(approvalId: string): LadderRow | null {
    const row = this.sql.exec("SELECT * FROM ladders WHERE approval_id = ?", approvalId).toArray()[0];
    return row ? toRow(row) : null;
  }

  save(row: LadderRow, nextAt: number | null): void {
    this.sql.exec(
      "UPDATE ladders SET ladder = ?, receipts = ?, progress = ?, next_at = ? WHERE approval_id = ?",
      JSON.stringify(row.ladder),
      JSON.stringify(row.receipts),
      row.progress,
      nextAt,
      row.approvalId,
    );
  }

  /** The ladders of pending requests due by `now`. */
  dueBy(now: number): LadderRow[] {
    return this.sql
      .exec(
        `SELECT l.* FROM ladders l JOIN approvals a ON a.id = l.approval_id
          WHERE a.state = 'pending' AND l.next_at IS NOT NULL AND l.next_at <= ? ORDER BY l.next_at`,
        now,
      )
      .toArray()
      .map(toRow);
  }

  /** When a pending request's ladder must next be looked at; null when none must. */
  nextDue(): number | null {
    return this.sql
      .exec<{ at: number | null }>(
        `SELECT MIN(l.next_at) AS at FROM ladders l JOIN approvals a ON a.id = l.approval_id
          WHERE a.state = 'pending' AND l.next_at IS NOT NULL`,
      )
      .one().at;
  }

  /** Ladders go with their requests (retention pruning). */
  pruneOrphans(): void {
    this.sql.exec("DELETE FROM ladders WHERE approval_id NOT IN (SELECT id FROM approvals)");
  }
}

function toRow(r: Record<string, SqlStorageValue>): LadderRow {
  return {
    approvalId: r.approval_id as string,
    ladder: JSON.parse(r.ladder as string) as Ladder,
    receipts: JSON.parse(r.receipts as string) as DeliveryReceipts,
    progress: (r.progress as string | null) ?? null,
  };
}
