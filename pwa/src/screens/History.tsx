import { type ApprovalView, api } from "../api";
import { useNow } from "../clock";
import { LoadBanner } from "../components/Banner";
import { KindIcon } from "../components/KindIcon";
import { PrivateTag, rowTitle } from "../components/PrivateNotes";
import { SafeText } from "../components/SafeText";
import { ago, dateTime, describeApproval, outcome, shortDuration } from "../format";
import { useLiveEvents } from "../live";
import { usePaged } from "../paged";
import { useSeenOne } from "../private/use-private";
import { Link } from "../router";
import { useMe } from "../viewer";

const PAGE = 30;

/** My resolved requests, newest first, a page at a time. */
export function History() {
  const me = useMe();
  const { items, setItems, cursor, loading, error, load } = usePaged(
    (from) =>
      api
        .approvals({ state: "resolved", scope: "mine", cursor: from, limit: PAGE })
        .then((page) => ({ items: page.approvals, cursor: page.cursor })),
    [],
    (a) => a.id,
  );

  // A request of mine resolved elsewhere goes on top without a reload.
  useLiveEvents((e) => {
    if (e.type !== "resolved" || e.approval.owner.userId !== me?.user.id) return;
    setItems((prev) => [e.approval, ...prev.filter((a) => a.id !== e.approval.id)]);
  });

  return (
    <section class="screen" data-testid="screen-history">
      <h1>History</h1>
      {error && <LoadBanner error={error} testId="history-error" what="history" />}
      {!loading && !error && items.length === 0 && (
        <p class="empty muted" data-testid="history-empty">
          Nothing yet: requests from your sessions show here once they are answered.
        </p>
      )}
      <ul class="rows">
        {items.map((a) => (
          <HistoryRow key={a.id} approval={a} myUserId={me?.user.id} />
        ))}
      </ul>
      {loading && <p class="muted">Loading…</p>}
      {cursor && !loading && (
        <button type="button" class="button secondary wide" onClick={() => void load(cursor)} data-testid="load-more">
          Load more
        </button>
      )}
    </section>
  );
}

function HistoryRow({ approval: asServed, myUserId }: { approval: ApprovalView; myUserId: string | undefined }) {
  const now = useNow();
  const seen = useSeenOne(asServed);
  const approval = seen.approval;
  const d = describeApproval(approval);
  const took = approval.resolvedAt ? shortDuration(approval.resolvedAt - approval.createdAt) : null;
  return (
    <li class="row">
      <Link
        href={`/approvals/${encodeURIComponent(approval.id)}`}
        class="row-link"
        data-testid={`history-row-${approval.id}`}
      >
        <KindIcon kind={d.kind} />
        <span class="row-main">
          <span class="row-title">
            <SafeText text={rowTitle(seen.private, d.title)} />
            <PrivateTag state={seen.private} />
          </span>
          <span class={`row-sub wrap outcome-${approval.state}`} data-testid="history-outcome">
            <SafeText text={outcome(approval, myUserId)} />
          </span>
          {approval.message && (
            <span class="row-sub wrap" data-testid="history-message">
              <SafeText text={`“${approval.message}”`} />
            </span>
          )}
        </span>
        <span class="row-meta">
          <span class="muted" title={dateTime(approval.createdAt)}>
            {ago(approval.resolvedAt ?? approval.createdAt, now)}
          </span>
          {took && <span data-testid="history-took">took {took}</span>}
        </span>
      </Link>
    </li>
  );
}
