/**
 * The Stats screen's rubber-stamping panel: per person (deciders only; a viewer gets the team's
 * row alone) and for the team, decisions, allow rate, decision time from the card shown
 * (p10/p50/p90), fast allows and high-risk allows; a flag on whoever's fast allows pass the
 * team's share, with a link to the requests behind it in History. Owns the rendering only:
 * the figures and the flag's rule come from `sdk/src/human/history.ts`.
 */
import {
  type ApproverFigures,
  fastAllowsFilter,
  historyQuery,
  type OversightFigures,
  rubberStamping,
  type Stats,
} from "../api";
import { Link } from "../router";
import { DataTable, latency } from "./ui";

const DAY_MS = 86_400_000;

/** The first millisecond of the period the server counted (UTC days, today included). */
function periodStart(days: number): number {
  const now = new Date();
  return Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - (days - 1) * DAY_MS;
}

const percent = (share: number | null) => (share === null ? "—" : `${Math.round(share * 100)} %`);

export function Oversight({ stats, days }: { stats: Stats; days: number }) {
  const { rubberStamp, approvers, team } = stats;
  const flagged = approvers.filter((a) => rubberStamping(a, rubberStamp));
  const under = latency(rubberStamp.ms);
  return (
    <section class="panel" data-testid="oversight">
      <h2>Rubber-stamping</h2>
      <p class="muted small">
        Time from the card shown (its push displayed or opened, or a page showing it; else the request's creation) to
        the decision. A fast allow is one under {under}; someone is flagged when more than {percent(rubberStamp.share)}{" "}
        of their allows are fast.
      </p>
      {flagged.map((a) => (
        <p class="banner banner-warn" key={a.userId} data-testid={`rubber-stamp-flag-${a.userId}`}>
          {a.name} allowed {a.fastAllows} of {a.allows} requests within {under} of seeing them (
          {percent(a.fastAllows / a.allows)}).{" "}
          <Link
            href={`/history?${historyQuery(fastAllowsFilter(a.userId, rubberStamp, periodStart(days)))}`}
            data-testid={`rubber-stamp-link-${a.userId}`}
          >
            See these requests
          </Link>
        </p>
      ))}
      <DataTable
        testId="oversight-table"
        head={
          <>
            <th>Who</th>
            <th class="num">Decisions</th>
            <th class="num">Allowed</th>
            <th class="num">p10</th>
            <th class="num">p50</th>
            <th class="num">p90</th>
            <th class="num">Fast allows</th>
            <th class="num">High-risk allows</th>
          </>
        }
      >
        {approvers.map((a) => (
          <FiguresRow key={a.userId} who={a.name} figures={a} flagged={flagged.includes(a)} testId={a.userId} />
        ))}
        <FiguresRow who="Team" figures={team} flagged={false} testId="team" />
      </DataTable>
    </section>
  );
}

function FiguresRow({
  who,
  figures: f,
  flagged,
  testId,
}: {
  who: string;
  figures: OversightFigures | ApproverFigures;
  flagged: boolean;
  testId: string;
}) {
  return (
    <tr data-testid={`oversight-row-${testId}`} data-flagged={flagged}>
      <td>
        {who} {flagged && <span class="tag warn">fast allows</span>}
      </td>
      <td class="num">{f.decisions}</td>
      <td class="num">{percent(f.allowRate)}</td>
      <td class="num">{latency(f.decideMs.p10)}</td>
      <td class="num">{latency(f.decideMs.p50)}</td>
      <td class="num">{latency(f.decideMs.p90)}</td>
      <td class="num">{f.fastAllows}</td>
      <td class="num">{f.highRiskAllows}</td>
    </tr>
  );
}
