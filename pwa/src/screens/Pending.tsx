import type { ApprovalView } from "../api";
import { ApprovalRow } from "../components/ApprovalRow";
import { Banner } from "../components/Banner";
import { ConnectionBanner } from "../components/ConnectionBanner";
import { SetUpDeviceBanner } from "../components/PrivateNotes";
import { useShowingCards } from "../live";
import { pending, usePending } from "../pending";
import { Link } from "../router";
import { useMe, useViewer } from "../viewer";

export function Pending() {
  const { viewer } = useViewer();
  const { mine, team, loaded, error } = usePending();
  const me = useMe();
  useShowingCards([...mine, ...team].map((a) => a.id));
  const offline = viewer.status === "offline" || error?.offline;
  return (
    <section class="screen" data-testid="screen-pending">
      <h1>Pending</h1>
      {offline ? (
        <Banner tone="warn" testId="offline-banner">
          Offline — pending requests will show here when you are back online.
        </Banner>
      ) : (
        <ConnectionBanner />
      )}
      <SetUpDeviceBanner me={me} />
      {error && !error.offline && (
        <Banner tone="error" testId="pending-error">
          {error.message}{" "}
          <button type="button" class="link-button" onClick={() => void pending.reload()}>
            Retry
          </button>
        </Banner>
      )}
      {viewer.status === "signed-in" && !loaded && !error && <p class="muted">Loading…</p>}
      {loaded && mine.length === 0 && team.length === 0 && (
        <div class="empty" data-testid="pending-empty">
          <p>Nothing is waiting for you.</p>
          <p class="muted">
            When an agent asks, its request appears here at once. <Link href="/devices">Turn on notifications</Link> to
            hear about it on this device.
          </p>
        </div>
      )}
      <Group title="My sessions" testId="pending-mine" approvals={mine} />
      <Group title="Team" testId="pending-team" approvals={team} />
    </section>
  );
}

function Group({ title, testId, approvals }: { title: string; testId: string; approvals: ApprovalView[] }) {
  if (approvals.length === 0) return null;
  return (
    <section aria-labelledby={`${testId}-title`}>
      <h2 id={`${testId}-title`} class="group-title">
        {title} <span class="muted">({approvals.length})</span>
      </h2>
      <ul class="rows" data-testid={testId}>
        {approvals.map((a) => (
          <ApprovalRow key={a.id} approval={a} />
        ))}
      </ul>
    </section>
  );
}
