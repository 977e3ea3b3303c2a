/** D1 access: history and stats. */
import type { ApprovalState } from "../../sdk/src/approval";
import type { HistoryItem } from "../../sdk/src/human/history";
import { type OwnedApprovalRow, ownedApprovalFromRow } from "./approvals";
import { decideMsSql } from "./oversight";

export interface HistoryFilter {
  teamId: string;
  state?: ApprovalState;
  reason?: string;
  /** The session's owner or the person who decided. */
  member?: string;
  session?: string;
  kind?: string;
  from?: number;
  to?: number;
  decider?: string;
  decidedUnderMs?: number;
}

/** The WHERE clause and bindings of a history filter; resolved requests of the team only. */
function historyWhere(f: HistoryFilter): { where: string; binds: Array<string | number> } {
  const where = ["a.team_id = ?", "a.state <> 'pending'"];
  const binds: Array<string | number> = [f.teamId];
  const add = (clause: string, ...values: Array<string | number>) => {
    where.push(clause);
    binds.push(...values);
  };
  if (f.state) add("a.state = ?", f.state);
  if (f.reason) add("a.reason = ?", f.reason);
  if (f.member) add("(a.owner_user_id = ? OR json_extract(a.decided_by, '$.userId') = ?)", f.member, f.member);
  if (f.session) add("a.session_id = ?", f.session);
  if (f.kind) add("a.tool_kind = ?", f.kind);
  if (f.from !== undefined) add("a.created_at >= ?", f.from);
  if (f.to !== undefined) add("a.created_at < ?", f.to);
  if (f.decider) add("json_extract(a.decided_by, '$.userId') = ?", f.decider);
  if (f.decidedUnderMs !== undefined) add(`a.reason = 'decided' AND ${decideMsSql} < ?`, f.decidedUnderMs);
  return { where: where.join(" AND "), binds };
}

export type HistoryApproval = HistoryItem;

/** Newest first; `cursor` is the last row of the previous page. */
export async function listHistory(
  db: D1Database,
  f: HistoryFilter,
  page: { cursor: { createdAt: number; id: string } | null; limit: number },
): Promise<HistoryApproval[]> {
  const { where, binds } = historyWhere(f);
  const after = page.cursor ? " AND (a.created_at < ? OR (a.created_at = ? AND a.id < ?))" : "";
  const cursorBinds = page.cursor ? [page.cursor.createdAt, page.cursor.createdAt, page.cursor.id] : [];
  const { results } = await db
    .prepare(
      `SELECT a.*, u.name AS owner_name FROM approvals a LEFT JOIN users u ON u.id = a.owner_user_id
        WHERE ${where}${after} ORDER BY a.created_at DESC, a.id DESC LIMIT ?`,
    )
    .bind(...binds, ...cursorBinds, page.limit)
    .all<OwnedApprovalRow>();
  return results.map((r) => {
    const approval = ownedApprovalFromRow(r);
    return { ...approval, latencyMs: approval.resolvedAt === null ? null : approval.resolvedAt - approval.createdAt };
  });
}

/** One flat row per resolved request, without the snapshot: what exports carry. */
export interface HistoryExportRow {
  id: string;
  createdAt: number;
  resolvedAt: number | null;
  state: ApprovalState;
  reason: string | null;
  sessionId: string;
  ownerUserId: string;
  ownerName: string | null;
  toolTitle: string | null;
  toolKind: string | null;
  optionId: string | null;
  decidedByUserId: string | null;
  decidedByName: string | null;
  decidedByDevice: string | null;
  latencyMs: number | null;
  /** The decider's words to the agent, if any. */
  message: string | null;
  /** A private request (sealed): its content is ciphertext the export cannot carry (`toolTitle` is then empty). */
  private: boolean;
}

export async function exportHistory(db: D1Database, f: HistoryFilter, limit: number): Promise<HistoryExportRow[]> {
  const { where, binds } = historyWhere(f);
  const { results } = await db
    .prepare(
      `SELECT a.id, a.created_at AS createdAt, a.resolved_at AS resolvedAt, a.state, a.reason,
              a.session_id AS sessionId, a.owner_user_id AS ownerUserId, u.name AS ownerName,
              a.tool_title AS toolTitle, a.tool_kind AS toolKind, a.option_id AS optionId,
              json_extract(a.decided_by, '$.userId') AS decidedByUserId,
              json_extract(a.decided_by, '$.name') AS decidedByName,
              json_extract(a.decided_by, '$.device') AS decidedByDevice,
              a.resolved_at - a.created_at AS latencyMs, a.message, a.sealed IS NOT NULL AS private
         FROM approvals a LEFT JOIN users u ON u.id = a.owner_user_id
        WHERE ${where} ORDER BY a.created_at DESC, a.id DESC LIMIT ?`,
    )
    .bind(...binds, limit)
    .all<Omit<HistoryExportRow, "private"> & { private: number }>();
  return results.map((r) => ({ ...r, private: r.private === 1 }));
}

export interface DayCounts {
  date: string;
  allowed: number;
  denied: number;
  cancelled: number;
  expired: number;
}

export interface LatencyStats {
  p50: number | null;
  p90: number | null;
  count: number;
}

/**
 * Requests per UTC day by outcome, and human decision latency percentiles (nearest rank), all
 * computed by D1: the Worker receives one row per day and one row of percentiles.
 */
export async function teamStats(
  db: D1Database,
  teamId: string,
  since: number,
): Promise<{ days: DayCounts[]; latency: LatencyStats }> {
  const [days, latency] = await db.batch<Record<string, unknown>>([
    db
      .prepare(
        `SELECT date(created_at / 1000, 'unixepoch') AS date,
                SUM(state = 'allowed') AS allowed, SUM(state = 'denied') AS denied,
                SUM(state = 'cancelled') AS cancelled, SUM(state = 'expired') AS expired
           FROM approvals WHERE team_id = ? AND created_at >= ? AND state <> 'pending'
          GROUP BY 1 ORDER BY 1`,
      )
      .bind(teamId, since),
    db
      .prepare(
        `WITH l AS (
           SELECT resolved_at - created_at AS ms,
                  ROW_NUMBER() OVER (ORDER BY resolved_at - created_at) AS rank, COUNT(*) OVER () AS n
             FROM approvals WHERE team_id = ? AND created_at >= ? AND reason = 'decided')
         SELECT COUNT(*) AS count, MIN(CASE WHEN rank >= n * 0.5 THEN ms END) AS p50,
                MIN(CASE WHEN rank >= n * 0.9 THEN ms END) AS p90
           FROM l`,
      )
      .bind(teamId, since),
  ]);
  const l = latency?.results[0] as { count: number; p50: number | null; p90: number | null } | undefined;
  return {
    days: (days?.results ?? []) as unknown as DayCounts[],
    latency: { p50: l?.p50 ?? null, p90: l?.p90 ?? null, count: l?.count ?? 0 },
  };
}
