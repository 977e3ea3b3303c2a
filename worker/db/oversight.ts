/**
 * D1 access: rubber-stamping figures (`GET /v1/stats`'s `team` and `approvers`), from the
 * approvals rows history lists, every one of the period (nothing sampled), computed by D1.
 *
 * Owns: what a decision's time is (`decideMsSql`: from the card shown to the decider, as the
 * gate recorded it in `decided_by.shownAt`, else from the request's creation, to its
 * resolution) and the figures' SQL. Does not own: the shapes (`sdk/src/human/history.ts`), the
 * threshold (team policy `rubberStampMs`), who may see each person's figures (the route).
 */
import type { ApproverFigures, OversightFigures } from "../../sdk/src/human/history";

/** The ms from the card shown to the decision of the approvals row `a` (never below 0). */
export const decideMsSql = "MAX(0, a.resolved_at - COALESCE(json_extract(a.decided_by, '$.shownAt'), a.created_at))";

/** Percentiles in SQL, nearest rank in integers (`rank * 100 >= n * p`): no float rounding. */
const PERCENTILES = [10, 50, 90] as const;

/**
 * The figures of human decisions (`reason = 'decided'`) of requests created since `since`,
 * grouped per decider or for the whole team; `?1` team, `?2` since, `?3` the fast-allow bound.
 */
function figuresSql(perApprover: boolean): string {
  const partition = perApprover ? "PARTITION BY user_id" : "";
  const percentiles = PERCENTILES.map((p) => `MIN(CASE WHEN rank * 100 >= n * ${p} THEN ms END) AS p${p}`).join(", ");
  return `WITH d AS (
      SELECT json_extract(a.decided_by, '$.userId') AS user_id, json_extract(a.decided_by, '$.name') AS name,
             a.state = 'allowed' AS allowed, a.risk IS 'high' AS high, ${decideMsSql} AS ms
        FROM approvals a
       WHERE a.team_id = ?1 AND a.created_at >= ?2 AND a.reason = 'decided' AND a.decided_by IS NOT NULL),
    r AS (SELECT *, ROW_NUMBER() OVER (${partition} ORDER BY ms) AS rank, COUNT(*) OVER (${partition}) AS n FROM d)
    SELECT ${perApprover ? "r.user_id AS userId, COALESCE(u.name, MAX(r.name), '') AS name," : ""}
           COUNT(*) AS decisions, COALESCE(SUM(allowed), 0) AS allows,
           COALESCE(SUM(allowed AND ms < ?3), 0) AS fastAllows, COALESCE(SUM(allowed AND high), 0) AS highRiskAllows,
           ${percentiles}
      FROM r${perApprover ? " LEFT JOIN users u ON u.id = r.user_id GROUP BY r.user_id ORDER BY fastAllows DESC, decisions DESC, r.user_id" : ""}`;
}

interface FiguresRow {
  userId?: string;
  name?: string;
  decisions: number;
  allows: number;
  fastAllows: number;
  highRiskAllows: number;
  p10: number | null;
  p50: number | null;
  p90: number | null;
}

function figuresOf(r: FiguresRow | undefined): OversightFigures {
  const decisions = r?.decisions ?? 0;
  const allows = r?.allows ?? 0;
  return {
    decisions,
    allows,
    allowRate: decisions === 0 ? null : allows / decisions,
    decideMs: { p10: r?.p10 ?? null, p50: r?.p50 ?? null, p90: r?.p90 ?? null },
    fastAllows: r?.fastAllows ?? 0,
    highRiskAllows: r?.highRiskAllows ?? 0,
  };
}

/** The team's figures, and each decider's unless `perApprover` is false (a viewer's `[]`). */
export async function oversightStats(
  db: D1Database,
  teamId: string,
  since: number,
  fastUnderMs: number,
  perApprover: boolean,
): Promise<{ team: OversightFigures; approvers: ApproverFigures[] }> {
  const team = db.prepare(figuresSql(false)).bind(teamId, since, fastUnderMs);
  const people = db.prepare(figuresSql(true)).bind(teamId, since, fastUnderMs);
  const [teamRows, peopleRows] = await db.batch<FiguresRow>(perApprover ? [team, people] : [team]);
  const approvers = (peopleRows?.results ?? []).map((r) => ({
    userId: r.userId ?? "",
    name: r.name ?? "",
    ...figuresOf(r),
  }));
  return { team: figuresOf(teamRows?.results[0]), approvers };
}
