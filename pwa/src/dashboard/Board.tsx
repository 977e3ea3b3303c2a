/**
 * The pending board: every waiting request of the team, grouped by session, live. Rows come from
 * the shared pending store (API + live feed + resync on reconnect); a row opens the same approval
 * card as on the phone, in a side panel.
 */
import { useEffect, useMemo, useState } from "preact/hooks";
import { api, canDecide, type Delivery, type Member, type PendingApproval } from "../api";
import { lookingWords, useLookers } from "../claims";
import { useNow } from "../clock";
import { ConnectionBanner } from "../components/ConnectionBanner";
import { Countdown } from "../components/Countdown";
import { KindIcon, kindLabel } from "../components/KindIcon";
import { PrivateTag, rowTitle, SetUpDeviceBanner } from "../components/PrivateNotes";
import { RiskTag } from "../components/RiskNote";
import { SafeText } from "../components/SafeText";
import { StopSessionButton } from "../components/SessionStop";
import { ago, describeApproval } from "../format";
import { useLiveStatus, useShowingCards } from "../live";
import { pending, usePending } from "../pending";
import { type PrivateState, useSeen } from "../private/use-private";
import { Link, navigate } from "../router";
import { ApprovalCard } from "../screens/ApprovalCard";
import { useMe } from "../viewer";
import { BatchBar, SelectBox, useSelection } from "./BatchDecide";
import { DeliveryChips, useDelivery } from "./delivery";
import { RefusalNotices } from "./RefusalNotices";
import { Empty, FilterSelect, LoadError, PageHead, SidePanel } from "./ui";

export function Board({ open }: { open: string | null }) {
  const me = useMe();
  const { mine, team, loaded, error } = usePending();
  const members = useMembers();
  const delivery = useDelivery([...mine, ...team]);
  const status = useLiveStatus();
  const [filter, setFilter] = useState({ member: "", kind: "", session: "" });

  const served = useMemo(() => [...mine, ...team].sort((a, b) => a.expiresAt - b.expiresAt), [mine, team]);
  // Private rows as this device opened them (the agent's words), or marked and showing none of it.
  const seen = useSeen(served);
  const all = seen.map((s) => s.approval);
  const privateOf = new Map(seen.map((s) => [s.approval.id, s.private]));
  const shown = all.filter(
    (a) =>
      (!filter.member || a.owner.userId === filter.member) &&
      (!filter.kind || describeApproval(a).kind === filter.kind) &&
      (!filter.session || a.sessionId === filter.session),
  );
  useShowingCards(shown.map((a) => a.id));
  const groups = groupBySession(shown);
  const allGroups = groupBySession(all);
  const sessions = allGroups.flatMap((g) =>
    g.rows[0] ? [{ value: g.sessionId, label: describeApproval(g.rows[0]).sessionTitle }] : [],
  );
  const kinds = [...new Set(all.map((a) => describeApproval(a).kind))].sort();
  const memberName = (a: PendingApproval | undefined) => {
    if (!a) return "—";
    const id = a.owner.userId;
    return id === me?.user.id ? "You" : members.get(id)?.name || a.owner.name || "—";
  };
  const filtered = filter.member || filter.kind || filter.session;
  const selection = useSelection(all);
  const selecting = canDecide(me?.role);
  const allShownSelected = shown.length > 0 && shown.every((a) => selection.has(a.id));

  const openRow = (id: string) => navigate(`/?open=${encodeURIComponent(id)}`, { keepScroll: true });
  const close = () => navigate("/", { keepScroll: true });

  return (
    <div class={open ? "board-layout with-panel" : "board-layout"}>
      <section class="screen dash" data-testid="screen-board">
        <PageHead
          title="Pending"
          sub={
            <>
              <span class={`live-dot live-${status}`} aria-hidden="true" />
              <span data-testid="board-summary">
                {loaded
                  ? `${all.length} waiting across ${allGroups.length} session${allGroups.length === 1 ? "" : "s"}`
                  : "Loading…"}
              </span>
              {status === "live" && <span class="muted"> · live</span>}
            </>
          }
        />
        <ConnectionBanner />
        <RefusalNotices />
        <SetUpDeviceBanner me={me} />
        {error && <LoadError error={error} testId="board-error" onRetry={() => void pending.reload()} />}
        {me && !canDecide(me.role) && (
          <p class="muted small" data-testid="viewer-hint">
            You are a viewer: you see every request, but only approvers can decide.
          </p>
        )}
        <div class="filters" data-testid="board-filters">
          <FilterSelect
            label="Member"
            value={filter.member}
            onChange={(member) => setFilter({ ...filter, member })}
            options={[...members.values()].map((m) => ({
              value: m.userId,
              label: m.userId === me?.user.id ? `${m.name} (you)` : m.name,
            }))}
            testId="filter-member"
            all="All members"
          />
          <FilterSelect
            label="Kind"
            value={filter.kind}
            onChange={(kind) => setFilter({ ...filter, kind })}
            options={kinds.map((k) => ({ value: k, label: kindLabel(k) }))}
            testId="filter-kind"
            all="All kinds"
          />
          <FilterSelect
            label="Session"
            value={filter.session}
            onChange={(session) => setFilter({ ...filter, session })}
            options={sessions}
            testId="filter-session"
            all="All sessions"
          />
          {filtered && (
            <button
              type="button"
              class="link-button"
              onClick={() => setFilter({ member: "", kind: "", session: "" })}
              data-testid="filter-clear"
            >
              Clear filters
            </button>
          )}
        </div>

        {selecting && <BatchBar selected={selection.selected} memberName={memberName} onClear={selection.clear} />}
        {loaded && all.length === 0 && (
          <Empty title="Nothing is waiting" testId="board-empty">
            When an agent in this team asks for permission, its request appears here at once.
          </Empty>
        )}
        {loaded && all.length > 0 && shown.length === 0 && (
          <Empty title="No request matches these filters" testId="board-empty-filtered" />
        )}
        {shown.length > 0 && (
          <div class="table-wrap">
            <table class="table board" data-testid="board-table">
              <thead>
                <tr>
                  {selecting && (
                    <th class="col-select">
                      <SelectBox
                        label="Select every request shown"
                        checked={allShownSelected}
                        onChange={(on) =>
                          selection.setMany(
                            shown.map((a) => a.id),
                            on,
                          )
                        }
                      />
                    </th>
                  )}
                  <th>Member</th>
                  <th class="col-opt">Session</th>
                  <th class="col-opt col-xwide">Agent</th>
                  <th class="col-opt col-xwide">Host</th>
                  <th>Request</th>
                  <th class="col-opt">Kind</th>
                  <th class="num col-opt">Age</th>
                  <th class="num">Expires</th>
                  <th>Delivery</th>
                </tr>
              </thead>
              {groups.map((g) => (
                <tbody key={g.sessionId} data-testid={`board-group-${g.sessionId}`}>
                  <SessionHeader rows={g.rows} owner={memberName(g.rows[0])} columns={selecting ? 10 : 9} />
                  {g.rows.map((a) => (
                    <BoardRow
                      key={a.id}
                      approval={a}
                      privateState={privateOf.get(a.id) ?? null}
                      member={memberName(a)}
                      delivery={a.delivery ?? delivery.get(a.id)}
                      selected={a.id === open}
                      onOpen={() => openRow(a.id)}
                      select={
                        selecting
                          ? { checked: selection.has(a.id), onChange: (on) => selection.toggle(a.id, on) }
                          : undefined
                      }
                    />
                  ))}
                </tbody>
              ))}
            </table>
          </div>
        )}
      </section>
      {open && (
        <SidePanel onClose={close} testId="board-panel" label="Request">
          <ApprovalCard key={open} id={open} embedded />
        </SidePanel>
      )}
    </div>
  );
}

function SessionHeader({ rows, owner, columns }: { rows: PendingApproval[]; owner: string; columns: number }) {
  const first = rows[0];
  if (!first) return null;
  const d = describeApproval(first);
  const s = first.snapshot.session;
  return (
    <tr class="group-row">
      <th colSpan={columns} scope="colgroup">
        <Link href={`/sessions/${encodeURIComponent(first.sessionId)}`} class="group-link">
          <SafeText text={d.sessionTitle} />
        </Link>
        <span class="muted">
          {" "}
          · {owner}
          {d.agent && (
            <>
              {" · "}
              <SafeText text={d.agent} />
            </>
          )}
          {s.host && (
            <>
              {" · "}
              <SafeText text={s.host} />
            </>
          )}
          {s.cwd && (
            <>
              {" · "}
              <SafeText text={s.cwd} />
            </>
          )}
        </span>
        <span class="group-count">{rows.length} waiting</span> <StopSessionButton sessionId={first.sessionId} compact />
      </th>
    </tr>
  );
}

function BoardRow({
  approval,
  privateState,
  member,
  delivery,
  selected,
  onOpen,
  select,
}: {
  approval: PendingApproval;
  privateState: PrivateState;
  member: string;
  delivery: Delivery[] | undefined;
  selected: boolean;
  onOpen: () => void;
  /** The batch checkbox, for people who may decide. */
  select?: { checked: boolean; onChange: (on: boolean) => void };
}) {
  const now = useNow();
  const me = useMe();
  const lookers = useLookers(approval.id, me?.user.id);
  const d = describeApproval(approval);
  const s = approval.snapshot.session;
  return (
    <tr
      class={selected ? "board-row selected" : "board-row"}
      onClick={onOpen}
      aria-selected={selected}
      data-testid={`board-row-${approval.id}`}
      data-session={approval.sessionId}
    >
      {select && (
        <td class="col-select">
          <SelectBox label="Select for a batch decision" checked={select.checked} onChange={select.onChange} />
        </td>
      )}
      <td class="nowrap" data-testid="board-member">
        {member}
      </td>
      <td class="col-opt clip">
        <SafeText text={d.sessionTitle} />
      </td>
      <td class="col-opt col-xwide clip muted">{d.agent ? <SafeText text={d.agent} /> : "—"}</td>
      <td class="col-opt col-xwide clip muted">{s.host ? <SafeText text={s.host} /> : "—"}</td>
      <td class="title-cell">
        <Link
          href={`/?open=${encodeURIComponent(approval.id)}`}
          class="row-open"
          onClick={(e) => {
            e.stopPropagation();
            if (!e.metaKey && !e.ctrlKey && !e.shiftKey) {
              e.preventDefault();
              onOpen();
            }
          }}
          data-testid={`board-open-${approval.id}`}
        >
          <KindIcon kind={d.kind} />
          <span class="clip">
            <SafeText text={rowTitle(privateState, d.title)} />
          </span>
          <RiskTag approval={approval} />
          <PrivateTag state={privateState} />
        </Link>
        {lookers.length > 0 && (
          <span class="cell-note" data-testid="board-lookers">
            <SafeText text={lookingWords(lookers)} />
          </span>
        )}
      </td>
      <td class="col-opt nowrap muted">{kindLabel(d.kind)}</td>
      <td class="num col-opt muted nowrap">{ago(approval.createdAt, now)}</td>
      <td class="num nowrap">
        <Countdown expiresAt={approval.expiresAt} testId="board-countdown" />
      </td>
      <td data-testid="board-delivery">
        <DeliveryChips delivery={delivery} />
      </td>
    </tr>
  );
}

function groupBySession(rows: PendingApproval[]): Array<{ sessionId: string; rows: PendingApproval[] }> {
  const groups = new Map<string, PendingApproval[]>();
  for (const a of rows) {
    const g = groups.get(a.sessionId);
    if (g) g.push(a);
    else groups.set(a.sessionId, [a]);
  }
  return [...groups].map(([sessionId, rows]) => ({ sessionId, rows }));
}

/** The team's members by id, for the member column and filter. */
export function useMembers(): Map<string, Member> {
  const [members, setMembers] = useState<Map<string, Member>>(new Map());
  useEffect(() => {
    api.members().then(
      (r) => setMembers(new Map(r.members.map((m) => [m.userId, m]))),
      () => {},
    );
  }, []);
  return members;
}
