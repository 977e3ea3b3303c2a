/**
 * History (resolved requests, filtered, paged, exported) and stats. Everything is scoped by the
 * team from the session cookie; filters only narrow it.
 */
import { Hono } from "hono";
import { csvLines } from "../../sdk/src/csv";
import {
  historyExportQuerySchema,
  historyQuerySchema,
  type Stats,
  statsQuerySchema,
} from "../../sdk/src/human/history";
import { requireCurrentWeb, requireWeb } from "../auth";
import {
  exportHistory,
  getTeamPolicy,
  type HistoryExportRow,
  type HistoryFilter,
  listHistory,
  oversightStats,
  teamStats,
} from "../db";
import { cursorParam, nextCursor, validate } from "../http";
import type { AppEnv } from "../types";

const EXPORT_CAP = 10_000;
const DAY_MS = 24 * 60 * 60 * 1000;

const pageQuery = historyQuerySchema.extend({ cursor: cursorParam.optional() });

/** The columns of an export, in order. */
const EXPORT_COLUMNS: Array<keyof HistoryExportRow> = [
  "id",
  "createdAt",
  "resolvedAt",
  "state",
  "reason",
  "sessionId",
  "ownerUserId",
  "ownerName",
  "toolTitle",
  "toolKind",
  "optionId",
  "decidedByUserId",
  "decidedByName",
  "decidedByDevice",
  "latencyMs",
  "message",
  "private",
];

export const historyRoutes = new Hono<AppEnv>()
  .use("/v1/history", requireWeb)
  .use("/v1/history/*", requireWeb)
  // Each person's figures go to those who decide, by the role the hub vouches for now.
  .use("/v1/stats", requireWeb, requireCurrentWeb)
  .get("/v1/history", validate("query", pageQuery), async (c) => {
    const { cursor, limit, ...filter } = c.req.valid("query");
    const approvals = await listHistory(
      c.env.DB,
      { ...filter, teamId: c.get("web").teamId },
      { cursor: cursor ?? null, limit },
    );
    return c.json({ approvals, cursor: nextCursor(approvals, limit) });
  })
  .get("/v1/history/export", validate("query", historyExportQuerySchema), async (c) => {
    const { format, ...filter } = c.req.valid("query");
    const f: HistoryFilter = { ...filter, teamId: c.get("web").teamId };
    const rows = await exportHistory(c.env.DB, f, EXPORT_CAP);
    const name = `tapgate-history-${new Date().toISOString().slice(0, 10)}.${format}`;
    c.header("Content-Disposition", `attachment; filename="${name}"`);
    c.header("Cache-Control", "no-store");
    if (format === "json") return c.json({ approvals: rows });
    c.header("Content-Type", "text/csv; charset=utf-8");
    return c.body(toCsv(rows));
  })
  .get("/v1/stats", validate("query", statsQuerySchema), async (c) => {
    const days = c.req.valid("query").days;
    const today = Date.UTC(...utcDate(new Date()));
    const since = today - (days - 1) * DAY_MS;
    const { teamId, role } = c.get("web");
    const { policy } = await getTeamPolicy(c.env.DB, teamId);
    const rubberStamp = { ms: policy.rubberStampMs, share: policy.rubberStampShare };
    const [stats, oversight] = await Promise.all([
      teamStats(c.env.DB, teamId, since),
      oversightStats(c.env.DB, teamId, since, rubberStamp.ms, role !== "viewer"),
    ]);
    // Days without requests have no row in D1's GROUP BY; the chart still shows them, as zeros.
    const byDate = new Map(stats.days.map((d) => [d.date, d]));
    const series = Array.from({ length: days }, (_, i) => {
      const date = new Date(since + i * DAY_MS).toISOString().slice(0, 10);
      return byDate.get(date) ?? { date, allowed: 0, denied: 0, cancelled: 0, expired: 0 };
    });
    return c.json({ days: series, latency: stats.latency, ...oversight, rubberStamp } satisfies Stats);
  });

function utcDate(d: Date): [number, number, number] {
  return [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()];
}

/** RFC 4180, with times as ISO 8601. */
export function toCsv(rows: HistoryExportRow[]): string {
  return csvLines([
    EXPORT_COLUMNS,
    ...rows.map((row) => EXPORT_COLUMNS.map((col) => (col.endsWith("At") ? isoTime(row[col]) : row[col]))),
  ]);
}

function isoTime(value: unknown): string | null {
  return typeof value === "number" ? new Date(value).toISOString() : null;
}
