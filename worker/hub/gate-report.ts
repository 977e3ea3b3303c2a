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
 * an approval row that ended a request is taken as that end's news too (at least once: a lost
 * `resolved` is repaired by the next flush that carries the row).
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
  for (const ended of endedBy(ops, Date.now())) {
    background(hub.approvalResolved(teamId, ended.approval, ended.ownerUserId).catch(() => undefined));
  }
  return { policy: newer };
}

/**
 * The approval rows that ended a request lately: each stands for its `resolved` news, which a
 * lost report (or a failed flush, whose retry carries rows and never news) did not bring. The
 * hub takes the news once (`approvalResolved` ignores an end it already showed), so the row of
 * a report that did arrive changes nothing. Rows older than the hub keeps ends are no news.
 */
function endedBy(ops: OutboxOp[], now: number) {
  return ops.flatMap((o) =>
    o.op === "approval" && o.approval.state !== "pending" && (o.approval.resolvedAt ?? 0) > now - KEEP_RESOLVED_MS
      ? [o]
      : [],
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
