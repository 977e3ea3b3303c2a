/** The team's resolved requests: who allowed what, when, and how fast. Filters, pages, export. */
import { useEffect, useState } from "preact/hooks";
import { historyFilterSchema } from "../../../sdk/src/human/history";
import { APPROVAL_STATES_RESOLVED, api, type HistoryFilters, type HistoryItem, historyQuery } from "../api";
import { Field } from "../components/Field";
import { KindIcon, kindLabel } from "../components/KindIcon";
import { PrivateTag, rowTitle } from "../components/PrivateNotes";
import { SafeText } from "../components/SafeText";
import { dateTime, describeApproval } from "../format";
import { useLiveEvents } from "../live";
import { usePaged } from "../paged";
import { matchesSearch, privateRowsCsv } from "../private/history";
import { type PrivateState, useSeen } from "../private/use-private";
import { navigate } from "../router";
import { ApprovalCard } from "../screens/ApprovalCard";
import { useMe } from "../viewer";
import { useMembers } from "./Board";
import {
  DataTable,
  Empty,
  FilterSelect,
  LoadError,
  latency,
  PageHead,
  Pager,
  SidePanel,
  StateBadge,
  shortDate,
} from "./ui";

const PAGE = 50;
const KINDS = ["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"];
export const REASONS: Record<string, string> = {
  decided: "Decided",
  expired: "Expired",
  agent_disconnected: "Agent disconnected",
  agent_cancelled: "Cancelled by agent",
  session_cancelled: "Session cancelled",
  session_stopped: "Session stopped",
  key_revoked: "Key revoked",
  service_restart: "Restart",
  invalid: "Invalid",
  rule: "Standing rule",
  dismissed: "Dismissed",
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
    state: (f.state || undefined) as HistoryFilters["state"],
    reason: (f.reason || undefined) as HistoryFilters["reason"],
    member: f.member || undefined,
    session: f.session || undefined,
    kind: f.kind || undefined,
    from: f.from ? day(f.from) : undefined,
    to: f.to ? day(f.to) + 86_400_000 - 1 : undefined,
  };
}

/** Filters a link brought in its query (the Stats screen's rubber-stamp flag), kept until cleared. */
function linkedFilters(): HistoryFilters {
  const parsed = historyFilterSchema.safeParse(Object.fromEntries(new URLSearchParams(location.search)));
  return parsed.success ? parsed.data : {};
}

/** The form's filters over the linked ones: a field set in the form wins. */
function merged(linked: HistoryFilters, form: HistoryFilters): HistoryFilters {
  return { ...linked, ...Object.fromEntries(Object.entries(form).filter(([, v]) => v !== undefined)) };
}

export function TeamHistory() {
  const me = useMe();
  const members = useMembers();
  const [form, setForm] = useState<Form>(EMPTY);
  const [linked, setLinked] = useState<HistoryFilters>(linkedFilters);
  const [open, setOpen] = useState<string | null>(null);
  const [sessions, setSessions] = useState<Array<{ value: string; label: string }>>([]);
  const filters = merged(linked, toFilters(form));
  const key = historyQuery(filters);
  const clear = () => {
    setForm(EMPTY);
    setLinked({});
    navigate("/history", { replace: true, keepScroll: true });
  };

  const list = usePaged(
    (from) => api.history(filters, from, PAGE).then((page) => ({ items: page.approvals, cursor: page.cursor })),
    [key],
    (a) => a.id,
  );
  const { items, cursor, loading, error, load } = list;
  // Private rows open here; the service cannot search or export what it never read.
  const [search, setSearch] = useState("");
  const seen = useSeen(items);
  const shown = seen.filter((s) => matchesSearch(s, search));
  const anyPrivate = seen.some((s) => s.private !== null);
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
    list.setItems((prev) => [a, ...prev.filter((x) => x.id !== a.id)]);
  });

  const set = (k: keyof Form) => (v: string) => setForm({ ...form, [k]: v });
  const who = (a: HistoryItem) => {
    const id = a.owner.userId;
    return !id ? "—" : id === me?.user.id ? "You" : (members.get(id)?.name ?? a.owner?.name ?? "—");
  };
  const exportHref = (format: "csv" | "json") => `/v1/history/export?${historyQuery(filters, { format })}`;
  /** The select filters: form field (also the test id's suffix), label, options, the "any" choice. */
  const selects: Array<[keyof Form, string, Array<{ value: string; label: string }>, string]> = [
    [
      "state",
      "Outcome",
      APPROVAL_STATES_RESOLVED.map((s) => ({ value: s, label: s[0]?.toUpperCase() + s.slice(1) })),
      "Any outcome",
    ],
    ["reason", "Reason", Object.entries(REASONS).map(([value, label]) => ({ value, label })), "Any reason"],
    ["member", "Member", [...members.values()].map((m) => ({ value: m.userId, label: m.name })), "All members"],
    ["session", "Session", sessions, "All sessions"],
    ["kind", "Kind", KINDS.map((k) => ({ value: k, label: kindLabel(k) })), "All kinds"],
  ];

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
              {anyPrivate && (
                <button
                  type="button"
                  class="button secondary compact"
                  onClick={() => download(privateRowsCsv(seen), "tapgate-private-history.csv")}
                  data-testid="export-private-csv"
                >
                  Export private rows (CSV, on this device)
                </button>
              )}
            </>
          }
        />
        <div class="filters" data-testid="history-filters">
          {selects.map(([k, label, options, all]) => (
            <FilterSelect
              key={k}
              label={label}
              value={form[k]}
              onChange={set(k)}
              options={options}
              testId={`filter-${k}`}
              all={all}
            />
          ))}
          <Field label="From" class="filter">
            <input
              type="date"
              value={form.from}
              max={form.to || undefined}
              onChange={(e) => set("from")(e.currentTarget.value)}
              data-testid="filter-from"
            />
          </Field>
          <Field label="To" class="filter">
            <input
              type="date"
              value={form.to}
              min={form.from || undefined}
              onChange={(e) => set("to")(e.currentTarget.value)}
              data-testid="filter-to"
            />
          </Field>
          <Field label="Search loaded rows" class="filter">
            <input
              type="search"
              value={search}
              onInput={(e) => setSearch(e.currentTarget.value)}
              data-testid="history-search"
            />
          </Field>
          {linked.decidedUnderMs !== undefined && (
            <span class="tag warn" data-testid="filter-fast-allows">
              Allowed by {members.get(linked.decider ?? "")?.name ?? "anyone"} within {latency(linked.decidedUnderMs)}{" "}
              of seeing it
            </span>
          )}
          {key && (
            <button type="button" class="link-button" onClick={clear} data-testid="filter-clear">
              Clear filters
            </button>
          )}
        </div>
        {anyPrivate && (
          <p class="muted small" data-testid="history-private-note">
            Private requests are opened, searched and exported on this device only, among the rows loaded here.
          </p>
        )}
        {error && <LoadError error={error} testId="history-error" onRetry={() => void load(null)} />}
        {!loading && !error && items.length === 0 && (
          <Empty title={key ? "Nothing matches these filters" : "No answered requests yet"} testId="history-empty">
            {key
              ? "Widen the date range or clear a filter."
              : "Requests show here once they are allowed, denied, cancelled or expired."}
          </Empty>
        )}
        {items.length > 0 && (
          <DataTable
            testId="history-table"
            head={
              <>
                <th>Asked</th>
                <th>Request</th>
                <th class="col-opt">Session</th>
                <th>Member</th>
                <th>Outcome</th>
                <th>Decided by</th>
                <th class="num">Latency</th>
              </>
            }
          >
            {shown.map(({ approval: a, private: privateState }) => (
              <HistoryRow
                key={a.id}
                approval={a}
                privateState={privateState}
                member={who(a)}
                myUserId={me?.user.id}
                selected={a.id === open}
                onOpen={() => setOpen(a.id)}
              />
            ))}
          </DataTable>
        )}
        <Pager list={list}>
          <span class="muted small" data-testid="history-count">
            {items.length > 0 && `${items.length} shown${cursor ? ", more available" : ""}`}
          </span>
        </Pager>
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
  privateState,
  member,
  myUserId,
  selected,
  onOpen,
}: {
  approval: HistoryItem;
  privateState: PrivateState;
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
            <SafeText text={rowTitle(privateState, d.title)} />
          </span>
          <PrivateTag state={privateState} />
        </button>
        {approval.message && (
          <span class="cell-note" data-testid="history-message">
            <SafeText text={`“${approval.message}”`} />
          </span>
        )}
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

/** Saves text built in the browser as a file. */
function download(text: string, name: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 0);
}
