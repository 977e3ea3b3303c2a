import type { ApprovalView } from "../api";
import { useNow } from "../clock";
import { ago, describeApproval } from "../format";
import { Link } from "../router";
import { Countdown } from "./Countdown";
import { KindIcon } from "./KindIcon";
import { SafeText } from "./SafeText";

/** A pending request in the list: the whole row is one link to its card. */
export function ApprovalRow({ approval }: { approval: ApprovalView }) {
  const now = useNow();
  const d = describeApproval(approval);
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
            <SafeText text={d.title} />
          </span>
          <span class="row-sub">
            <SafeText text={d.agent ? `${d.agent} · ${d.sessionTitle}` : d.sessionTitle} />
          </span>
        </span>
        <span class="row-meta">
          <span class="muted">{ago(approval.createdAt, now)}</span>
          <Countdown expiresAt={approval.expiresAt} />
        </span>
      </Link>
    </li>
  );
}
