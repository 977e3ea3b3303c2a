/**
 * A SessionGate's report: everything one change of a session tells its team's hub, in one call
 * (`gateReport`). A decision used to cost the hub two calls (the resolution, then the outbox
 * rows) and a dropped socket three (with the session's state): each with its own dispatch and
 * serialisation on the team's one hub, which is what a burst queues on.
 *
 * News is taken up first and never waits on D1: each item starts as the hub method of its name
 * would, in the order the gate sent them, and only a `session` item's answer is awaited (it may
 * carry a newer policy back). The outbox rows are written meanwhile; the call resolves once D1
 * has them, and rejects when that failed, so the gate keeps the rows (never the news) for its
 * retry. A failing item fails alone: the rest of the report still counts. Once D1 has the rows,
 * an approval row that ended a request is taken as that end's news too, and a pending row with
 * a quorum's first allow ("1 of 2") as its `updated` news (at least once: a lost `resolved` or
 * `updated` is repaired by the next flush that carries the row).
 *
 * Owns: that order. Does not own: what each item does (the hub's methods and their subsystems).
 */
import type { VersionedPolicy } from "../policy";
import type { GateNews, GateReport, GateReportAnswer, OutboxOp, TeamHubApi } from "./api";
import { KEEP_RESOLVED_MS } from "./live-feed";

/** The hub methods a report's items stand for. */
export type NewsReader = Pick<
  TeamHubApi,
  "approvalCreated" | "approvalResolved" | "approvalUpdated" | "sessionChanged" | "releaseRequest" | "writeOutbox"
>;

export async function readGateReport(
  hub: NewsReader,
  teamId: string,
  report: GateReport,
  background: (work: Promise<unknown>) => void,
): Promise<GateReportAnswer> {
  let policy: Promise<VersionedPolicy | null> = Promise.resolve(null);
  for (const item of report.news) {
    if (item.kind === "session") {
      policy = hub.sessionChanged(teamId, item.news).catch(() => null);
      continue;
    }
    background(takeNews(hub, teamId, item).catch(() => undefined));
  }
  const ops = report.ops ?? [];
  const [newer] = await Promise.all([policy, ops.length > 0 ? hub.writeOutbox(teamId, ops) : undefined]);
  for (const { approval, ownerUserId } of rowNews(ops, Date.now())) {
    const news =
      approval.state === "pending"
        ? hub.approvalUpdated(teamId, approval, ownerUserId)
        : hub.approvalResolved(teamId, approval, ownerUserId);
    background(news.catch(() => undefined));
  }
  return { policy: newer };
}

type ApprovalRow = Extract<OutboxOp, { op: "approval" }>;

/**
 * The approval rows that stand for news a lost report (or a failed flush, whose retry carries
 * rows and never news) did not bring: a row that ended a request lately, for its `resolved`,
 * and a pending row whose quorum has an allow ("1 of 2"), for its `updated`. Only each request's
 * last row in the flush counts (an earlier one is no longer how it stands), and only within the
 * time the hub keeps ends (older rows are no news, and a pending one must not show a card again).
 * The hub takes each once (`approvalResolved` ignores an end it showed; `approvalUpdated` a
 * request it already has as it stands, and never reopens an ended one), so the row of a report
 * that did arrive changes nothing.
 */
function rowNews(ops: OutboxOp[], now: number): ApprovalRow[] {
  const last = new Map<string, ApprovalRow>();
  for (const o of ops) if (o.op === "approval") last.set(o.approval.id, o);
  const since = now - KEEP_RESOLVED_MS;
  return [...last.values()].filter(({ approval: a }) =>
    a.state === "pending"
      ? a.expiresAt > now && Math.max(0, ...(a.quorum?.allowedBy ?? []).map((p) => p.at)) > since
      : (a.resolvedAt ?? 0) > since,
  );
}

function takeNews(hub: NewsReader, teamId: string, item: Exclude<GateNews, { kind: "session" }>): Promise<void> {
  switch (item.kind) {
    case "created":
      return hub.approvalCreated(teamId, item.news);
    case "resolved":
      return hub.approvalResolved(teamId, item.approval, item.ownerUserId);
    case "updated":
      return hub.approvalUpdated(teamId, item.approval, item.ownerUserId);
    case "released":
      return hub.releaseRequest(teamId, item.approvalId);
  }
}
