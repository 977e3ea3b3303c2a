/** The team's resolved requests: who allowed what, when, and how fast. Filters, pages, export. */
import { useEffect, useState } from "preact/hooks";
import {
  APPROVAL_STATES_RESOLVED,
  type ApiError,
  api,
  type HistoryFilters,
  type HistoryItem,
  historyQuery,
  ownerId,
} from "../api";
import { KindIcon, kindLabel } from "../components/KindIcon";
import { SafeText } from "../components/SafeText";
import { dateTime, describeApproval } from "../format";
import { useLiveEvents } from "../live";
import { ApprovalCard } from "../screens/ApprovalCard";
import { useMe } from "../session";
import { useMembers } from "./Board";
import { Empty, FilterSelect, LoadError, latency, PageHead, SidePanel, StateBadge, shortDate } from "./ui";

const PAGE = 50;
const KINDS = ["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"];
export const REASONS: Record<string, string> = {
  decided: "Decided",
  expired: "Expired",
  agent_disconnected: "Agent disconnected",
  agent_cancelled: "Cancelled by agent",
  session_cancelled: "Session cancelled",
  key_revoked: "Key revoked",
  service_restart: "Restart",
  invalid: "Invalid",
};

interface Form {
  state: string;
  reason: string;
  member: string;
  session: string;
  kind: string;
  from: string;
  to: string;
}
const EMPTY: Form = { state: "", reason: "", member: "", session: "", kind: "", from: "", to: "" };

/** Date inputs are local days: from its first millisecond to the last one of `to`. */
function toFilters(f: Form): HistoryFilters {
  const day = (s: string) => {
    const [y, m, d] = s.split("-").map(Number);
    return new Date(y ?? 1970, (m ?? 1) - 1, d ?? 1).getTime();
  };
  return {
    state: f.state || undefined,
    reason: f.reason || undefined,
    member: f.member || undefined,
    session: f.session || undefined,
    kind: f.kind || undefined,
    from: f.from ? day(f.from) : undefined,
    to: f.to ? day(f.to) + 86_400_000 - 1 : undefined,
  };
}

export function TeamHistory() {
  const me = useMe();
  const members = useMembers();
  const [form, setForm] = useState<Form>(EMPTY);
  const [items, setItems] = useState<HistoryItem[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<ApiError | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [sessions, setSessions] = useState<Array<{ value: string; label: string }>>([]);
  const filters = toFilters(form);
  const key = historyQuery(filters);

  const load = async (from: string | null) => {
    setLoading(true);
    try {
      const page = await api.history(filters, from, PAGE);
      setItems((prev) =>
        from ? [...prev, ...page.approvals.filter((a) => !prev.some((p) => p.id === a.id))] : page.approvals,
      );
      setCursor(page.cursor);
      setError(null);
    } catch (e) {
      setError(e as ApiError);
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => void load(null), [key]);
  useEffect(() => {
    api.sessions("recent").then(
      (r) => setSessions(r.sessions.map((s) => ({ value: s.sessionId, label: s.title || s.sessionId }))),
      () => {},
    );
  }, []);

  // Newly resolved requests go on top when no filter could exclude them.
  useLiveEvents((e) => {
    if (e.type === "resync") void load(null);
    if (e.type !== "resolved" || key !== "") return;
    const a: HistoryItem = {
      ...e.approval,
      latencyMs: e.approval.resolvedAt ? e.approval.resolvedAt - e.approval.createdAt : null,
    };
    setItems((prev) => [a, ...prev.filter((x) => x.id !== a.id)]);
  });

  const set = (k: keyof Form) => (v: string) => setForm({ ...form, [k]: v });
  const who = (a: HistoryItem) => {
    const id = ownerId(a);
    return !id ? "—" : id === me?.user.id ? "You" : (members.get(id)?.name ?? a.owner?.name ?? "—");
  };
  const exportHref = (format: "csv" | "json") => `/v1/history/export?${historyQuery(filters, { format })}`;

  return (
    <div class={open ? "board-layout with-panel" : "board-layout"}>
      <section class="screen dash" data-testid="screen-team-history">
        <PageHead
          title="History"
          sub="Every answered request of the team, newest first."
          actions={
            <>
              <a class="button secondary compact" href={exportHref("csv")} download data-testid="export-csv">
                Export CSV
              </a>
              <a class="button secondary compact" href={exportHref("json")} download data-testid="export-json">
                Export JSON
              </a>
            </>
          }
        />
        <div class="filters" data-testid="history-filters">
          <FilterSelect
            label="Outcome"
            value={form.state}
            onChange={set("state")}
            options={APPROVAL_STATES_RESOLVED.map((s) => ({ value: s, label: s[0]?.toUpperCase() + s.slice(1) }))}
            testId="filter-state"
            all="Any outcome"
          />
          <FilterSelect
            label="Reason"
            value={form.reason}
            onChange={set("reason")}
            options={Object.entries(REASONS).map(([value, label]) => ({ value, label }))}
            testId="filter-reason"
            all="Any reason"
          />
          <FilterSelect
            label="Member"
            value={form.member}
            onChange={set("member")}
            options={[...members.values()].map((m) => ({ value: m.userId, label: m.name }))}
            testId="filter-member"
            all="All members"
          />
          <FilterSelect
            label="Session"
            value={form.session}
            onChange={set("session")}
            options={sessions}
            testId="filter-session"
            all="All sessions"
          />
          <FilterSelect
            label="Kind"
            value={form.kind}
            onChange={set("kind")}
            options={KINDS.map((k) => ({ value: k, label: kindLabel(k) }))}
            testId="filter-kind"
            all="All kinds"
          />
          <label class="filter">
            <span>From</span>
            <input
              type="date"
              value={form.from}
              max={form.to || undefined}
              onChange={(e) => set("from")(e.currentTarget.value)}
              data-testid="filter-from"
            />
          </label>
          <label class="filter">
            <span>To</span>
            <input
              type="date"
              value={form.to}
              min={form.from || undefined}
              onChange={(e) => set("to")(e.currentTarget.value)}
              data-testid="filter-to"
            />
          </label>
          {key && (
            <button type="button" class="link-button" onClick={() => setForm(EMPTY)} data-testid="filter-clear">
              Clear filters
            </button>
          )}
        </div>
        {error && <LoadError error={error} testId="history-error" onRetry={() => void load(null)} />}
        {!loading && !error && items.length === 0 && (
          <Empty title={key ? "Nothing matches these filters" : "No answered requests yet"} testId="history-empty">
            {key
              ? "Widen the date range or clear a filter."
              : "Requests show here once they are allowed, denied, cancelled or expired."}
          </Empty>
        )}
        {items.length > 0 && (
          <div class="table-wrap">
            <table class="table" data-testid="history-table">
              <thead>
                <tr>
                  <th>Asked</th>
                  <th>Request</th>
                  <th class="col-opt">Session</th>
                  <th>Member</th>
                  <th>Outcome</th>
                  <th>Decided by</th>
                  <th class="num">Latency</th>
                </tr>
              </thead>
              <tbody>
                {items.map((a) => (
                  <HistoryRow
                    key={a.id}
                    approval={a}
                    member={who(a)}
                    myUserId={me?.user.id}
                    selected={a.id === open}
                    onOpen={() => setOpen(a.id)}
                  />
                ))}
              </tbody>
            </table>
          </div>
        )}
        <div class="pager">
          <span class="muted small" data-testid="history-count">
            {items.length > 0 && `${items.length} shown${cursor ? ", more available" : ""}`}
          </span>
          {loading && <span class="muted">Loading…</span>}
          {cursor && !loading && (
            <button
              type="button"
              class="button secondary compact"
              onClick={() => void load(cursor)}
              data-testid="load-more"
            >
              Load more
            </button>
          )}
        </div>
      </section>
      {open && (
        <SidePanel onClose={() => setOpen(null)} testId="history-panel" label="Request">
          <ApprovalCard key={open} id={open} embedded />
        </SidePanel>
      )}
    </div>
  );
}

function HistoryRow({
  approval,
  member,
  myUserId,
  selected,
  onOpen,
}: {
  approval: HistoryItem;
  member: string;
  myUserId: string | undefined;
  selected: boolean;
  onOpen: () => void;
}) {
  const d = describeApproval(approval);
  const by = approval.decidedBy;
  const ms = approval.latencyMs ?? (approval.resolvedAt ? approval.resolvedAt - approval.createdAt : null);
  return (
    <tr
      class={selected ? "board-row selected" : "board-row"}
      onClick={onOpen}
      aria-selected={selected}
      data-testid={`history-row-${approval.id}`}
    >
      <td class="nowrap muted" title={dateTime(approval.createdAt)}>
        {shortDate(approval.createdAt)}
      </td>
      <td class="title-cell">
        <button
          type="button"
          class="row-open"
          onClick={(e) => {
            e.stopPropagation();
            onOpen();
          }}
        >
          <KindIcon kind={d.kind} />
          <span class="clip">
            <SafeText text={d.title} />
          </span>
        </button>
      </td>
      <td class="col-opt clip muted">
        <SafeText text={d.sessionTitle} />
      </td>
      <td class="nowrap">{member}</td>
      <td class="nowrap" data-testid="history-outcome">
        <StateBadge state={approval.state} />{" "}
        {approval.reason && approval.reason !== "decided" && (
          <span class="muted small">{REASONS[approval.reason] ?? approval.reason}</span>
        )}
      </td>
      <td class="nowrap" data-testid="history-decided-by">
        {by ? (
          <>
            {by.userId === myUserId ? "You" : <SafeText text={by.name} />}
            {by.device && (
              <span class="muted small">
                {" "}
                · <SafeText text={by.device} />
              </span>
            )}
          </>
        ) : (
          <span class="muted">—</span>
        )}
      </td>
      <td class="num nowrap" data-testid="history-latency">
        {latency(ms)}
      </td>
    </tr>
  );
}
