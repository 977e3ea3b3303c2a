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
 * retry. A failing item fails alone: the rest of the report still counts.
 *
 * Owns: that order. Does not own: what each item does (the hub's methods and their subsystems).
 */
import type { VersionedPolicy } from "../policy";
import type { GateNews, GateReport, GateReportAnswer, TeamHubApi } from "./api";

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
  return { policy: newer };
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
