import type { ApprovalView } from "../api";
import { useNow } from "../clock";
import { ago, describeApproval, outcome } from "../format";
import { useSeenOne } from "../private/use-private";
import { Link } from "../router";
import { Countdown } from "./Countdown";
import { KindIcon } from "./KindIcon";
import { PrivateTag, rowTitle } from "./PrivateNotes";
import { RiskTag } from "./RiskNote";
import { SafeText } from "./SafeText";

/** A request in a list (pending, or resolved on a session's page): the whole row is one link to its card. */
export function ApprovalRow({ approval: asServed }: { approval: ApprovalView }) {
  const now = useNow();
  const seen = useSeenOne(asServed);
  const approval = seen.approval;
  const d = describeApproval(approval);
  const title = rowTitle(seen.private, d.title);
  return (
    <li class="row">
      <Link
        href={`/approvals/${encodeURIComponent(approval.id)}`}
        class="row-link"
        data-testid={`pending-row-${approval.id}`}
      >
        <KindIcon kind={d.kind} />
        <span class="row-main">
          <span class="row-title">
            <SafeText text={title} />
            <RiskTag approval={approval} />
            <PrivateTag state={seen.private} />
          </span>
          <span class="row-sub">
            <SafeText text={d.agent ? `${d.agent} · ${d.sessionTitle}` : d.sessionTitle} />
          </span>
        </span>
        <span class="row-meta">
          <span class="muted">{ago(approval.createdAt, now)}</span>
          {approval.state === "pending" ? (
            <Countdown expiresAt={approval.expiresAt} />
          ) : (
            <span class={`outcome-${approval.state}`} data-testid="row-outcome">
              <SafeText text={outcome(approval)} />
            </span>
          )}
        </span>
      </Link>
    </li>
  );
}
