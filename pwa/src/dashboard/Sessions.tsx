/** Agent sessions of the team (connected now, or recent), live; and one session's requests in order. */
import { useEffect, useRef, useState } from "preact/hooks";
import type { DeadLetteredSession } from "../../../sdk/src/human/sessions";
import { parentWords } from "../../../sdk/src/subagent";
import { type AgentSession, type ApprovalView, api, isAdmin } from "../api";
import { useNow } from "../clock";
import { ApprovalRow } from "../components/ApprovalRow";
import { Banner } from "../components/Banner";
import { SafeText } from "../components/SafeText";
import { StoppedNote, StopSessionButton } from "../components/SessionStop";
import { ago, dateTime } from "../format";
import { useLiveEvents } from "../live";
import { Link } from "../router";
import { useAction } from "../use-action";
import { useMe } from "../viewer";
import { agentName, DataTable, Empty, LoadError, PageHead, useLoad } from "./ui";

export function Sessions() {
  const [state, setState] = useState<"connected" | "recent">("connected");
  const list = useLoad(() => api.sessions(state), [state]);
  const refetch = useDebounced(() => void list.reload(), 400);

  useLiveEvents((e) => {
    if (e.type === "resync") void list.reload();
    else if (e.type === "session") {
      const s = e.session;
      list.setData((prev) => {
        if (!prev) return prev;
        const others = prev.sessions.filter((x) => x.sessionId !== s.sessionId);
        const gone = state === "connected" && s.disconnectedAt !== null && s.disconnectedAt !== undefined;
        return { sessions: gone ? others : [s, ...others], deadLettered: withDeadLettered(prev.deadLettered, s) };
      });
    } else refetch(); // pending counts moved
  });

  const sessions = list.data?.sessions ?? [];
  return (
    <section class="screen dash" data-testid="screen-sessions">
      <PageHead
        title="Sessions"
        sub="Agent sessions of the team: who runs them, where, and what they are waiting on."
        actions={
          <fieldset class="segmented">
            <legend class="visually-hidden">Which sessions</legend>
            {(["connected", "recent"] as const).map((s) => (
              <button
                key={s}
                type="button"
                aria-pressed={state === s}
                onClick={() => setState(s)}
                data-testid={`sessions-${s}`}
              >
                {s === "connected" ? "Connected" : "Recent"}
              </button>
            ))}
          </fieldset>
        }
      />
      {list.error && <LoadError error={list.error} testId="sessions-error" onRetry={() => void list.reload()} />}
      {list.data && sessions.length === 0 && (
        <Empty title={state === "connected" ? "No agent is connected" : "No recent sessions"} testId="sessions-empty">
          Sessions appear here when an agent connects with one of the team's API keys.
        </Empty>
      )}
      {!list.data && list.loading && <p class="muted">Loading…</p>}
      <DeadLetters deadLettered={list.data?.deadLettered ?? []} replayed={() => void list.reload()} />
      {sessions.length > 0 && <SessionTable sessions={sessions} changed={() => void list.reload()} />}
    </section>
  );
}

/** A session's report changed its dead-letter count: the banner follows it. */
function withDeadLettered(list: DeadLetteredSession[], s: AgentSession): DeadLetteredSession[] {
  const others = list.filter((d) => d.sessionId !== s.sessionId);
  const known = list.find((d) => d.sessionId === s.sessionId);
  if (!s.deadLetters) return others;
  const at = known && known.deadLetters === s.deadLetters ? known.at : s.lastSeenAt;
  return [{ sessionId: s.sessionId, deadLetters: s.deadLetters, at }, ...others];
}

/**
 * Sessions whose records could not be written (the gate's outbox dead letters): the approvals
 * index or the audit log may lack them, so the team should know. They are replayed by
 * themselves after the session's next write; owners and admins can replay them now.
 */
function DeadLetters({ deadLettered, replayed }: { deadLettered: DeadLetteredSession[]; replayed: () => void }) {
  const me = useMe();
  const replay = useAction();
  if (deadLettered.length === 0) return null;
  const rows = deadLettered.reduce((n, d) => n + d.deadLetters, 0);
  const mayReplay = me !== null && isAdmin(me.role);
  const replayOne = (sessionId: string) =>
    replay.run(async () => {
      const { deadLetters } = await api.replayDeadLetters(sessionId);
      if (deadLetters > 0) replay.setError(`${deadLetters} still could not be saved; they are tried again later.`);
      replayed();
    });
  return (
    <Banner tone="warn" testId="dead-letters-banner">
      {rows} record{rows === 1 ? "" : "s"} of {deadLettered.length} session{deadLettered.length === 1 ? "" : "s"} could
      not be saved to the history or the audit log; they are kept and tried again:{" "}
      {deadLettered.map((d, i) => (
        <span key={d.sessionId}>
          {i > 0 && ", "}
          <Link href={`/sessions/${encodeURIComponent(d.sessionId)}`} data-testid="dead-letter-link">
            <SafeText text={d.sessionId} />
          </Link>{" "}
          ({d.deadLetters}){" "}
          {mayReplay && (
            <button
              type="button"
              class="button compact"
              disabled={replay.busy}
              onClick={() => void replayOne(d.sessionId)}
              data-testid="dead-letter-replay"
            >
              {replay.busy ? "Replaying…" : "Replay now"}
            </button>
          )}
        </span>
      ))}
      {replay.error && (
        <span class="row-error" role="alert" data-testid="dead-letter-replay-error">
          {" "}
          {replay.error}
        </span>
      )}
    </Banner>
  );
}

function SessionTable({ sessions, changed }: { sessions: AgentSession[]; changed: () => void }) {
  const now = useNow();
  return (
    <DataTable
      testId="sessions-table"
      head={
        <>
          <th>Session</th>
          <th>Owner</th>
          <th>Agent</th>
          <th>Host</th>
          <th>Directory</th>
          <th>Connected</th>
          <th>Last seen</th>
          <th class="num">Pending</th>
          <th>Stop</th>
        </>
      }
    >
      {sessions.map((s) => (
        <tr key={s.sessionId} data-testid={`session-row-${s.sessionId}`}>
          <td class="clip strong">
            <Link href={`/sessions/${encodeURIComponent(s.sessionId)}`} data-testid="session-link">
              <SafeText text={s.title || s.sessionId} />
            </Link>
            {s.parent && (
              <span class="muted small" data-testid="session-parent">
                {" "}
                <SafeText text={parentWords(s.parent, s.title)} />
              </span>
            )}
          </td>
          <td class="nowrap">{s.owner?.name ?? "—"}</td>
          <td class="clip muted">{agentName(s.agent) ? <SafeText text={agentName(s.agent) ?? ""} /> : "—"}</td>
          <td class="clip muted">{s.host ? <SafeText text={s.host} /> : "—"}</td>
          <td class="clip mono muted">{s.cwd ? <SafeText text={s.cwd} /> : "—"}</td>
          <td class="nowrap">
            {s.disconnectedAt ? (
              <span class="muted">disconnected {ago(s.disconnectedAt, now)}</span>
            ) : s.connectedAt ? (
              <span title={dateTime(s.connectedAt)}>
                <span class="live-dot live-live" aria-hidden="true" /> since {ago(s.connectedAt, now)}
              </span>
            ) : (
              "—"
            )}
          </td>
          <td class="nowrap muted">{s.lastSeenAt ? ago(s.lastSeenAt, now) : "—"}</td>
          <td class="num">
            {s.pending > 0 ? <span class="count-pill">{s.pending}</span> : <span class="muted">0</span>}
            {s.deadLetters ? (
              <span class="muted" title="records that could not be saved" data-testid="session-dead-letters">
                {" "}
                · {s.deadLetters} unsaved
              </span>
            ) : null}
          </td>
          <td class="nowrap">
            <SessionStopControl session={s} changed={changed} />
          </td>
        </tr>
      ))}
    </DataTable>
  );
}

export function SessionPage({ id }: { id: string }) {
  const now = useNow();
  const page = useLoad(() => api.session(id), [id]);
  useLiveEvents((e) => {
    if (e.type === "resync") void page.reload();
    else if (e.type === "session" && e.session.sessionId === id)
      page.setData((prev) => (prev ? { ...prev, ...e.session } : prev));
    else if (e.type === "withdrawn")
      page.setData((prev) => {
        if (!prev) return prev;
        const approvals = prev.approvals.filter((x) => x.id !== e.approvalId);
        return { ...prev, approvals, pending: approvals.filter((x) => x.state === "pending").length };
      });
    else if ((e.type === "approval" || e.type === "resolved") && e.approval.sessionId === id) {
      const a = e.approval;
      page.setData((prev) => {
        if (!prev) return prev;
        const has = prev.approvals.some((x) => x.id === a.id);
        const approvals: ApprovalView[] = has
          ? prev.approvals.map((x) => (x.id === a.id ? a : x))
          : [...prev.approvals, a];
        return { ...prev, approvals, pending: approvals.filter((x) => x.state === "pending").length };
      });
    }
  });
  const s = page.data;
  return (
    <section class="screen dash" data-testid="screen-session">
      <p class="crumbs">
        <Link href="/sessions">Sessions</Link> /
      </p>
      {page.error && (
        <LoadError
          error={
            page.error.status === 404
              ? Object.assign(page.error, { message: "No such session in this team." })
              : page.error
          }
          testId="session-error"
        />
      )}
      {!s && page.loading && <p class="muted">Loading…</p>}
      {s && (
        <>
          <PageHead
            title={s.title || s.sessionId}
            sub={s.disconnectedAt ? `Disconnected ${ago(s.disconnectedAt, now)}` : "Connected"}
            actions={<SessionStopControl session={s} changed={() => void page.reload()} />}
          />
          <dl class="facts wide-facts" data-testid="session-facts">
            {s.parent && (
              <>
                <dt>Subagent</dt>
                <dd data-testid="session-parent">
                  <Link href={`/sessions/${encodeURIComponent(s.parent.sessionId)}`}>
                    <SafeText text={parentWords(s.parent, s.title)} />
                  </Link>
                  {s.parent.task && (
                    <>
                      {" — "}
                      <SafeText text={s.parent.task} />
                    </>
                  )}
                </dd>
              </>
            )}
            <dt>Owner</dt>
            <dd>{s.owner?.name ?? "—"}</dd>
            <dt>Agent</dt>
            <dd>{agentName(s.agent) ? <SafeText text={agentName(s.agent) ?? ""} /> : "—"}</dd>
            <dt>Host</dt>
            <dd>{s.host ? <SafeText text={s.host} /> : "—"}</dd>
            <dt>Directory</dt>
            <dd class="mono">{s.cwd ? <SafeText text={s.cwd} /> : "—"}</dd>
            <dt>Connected</dt>
            <dd>{s.connectedAt ? dateTime(s.connectedAt) : "—"}</dd>
            <dt>Last seen</dt>
            <dd>{s.lastSeenAt ? ago(s.lastSeenAt, now) : "—"}</dd>
            <dt>Session id</dt>
            <dd class="mono">
              <SafeText text={s.sessionId} />
            </dd>
          </dl>
          <h2 class="group-title">
            Requests <span class="muted">({s.approvals.length})</span>
          </h2>
          {s.approvals.length === 0 ? (
            <Empty title="This session has not asked for anything yet" testId="session-empty" />
          ) : (
            <ul class="rows" data-testid="session-approvals">
              {s.approvals.map((a) => (
                <ApprovalRow key={a.id} approval={a} />
              ))}
            </ul>
          )}
        </>
      )}
    </section>
  );
}

/** A stopped session's note (with Resume), else its Stop button; `changed` reloads after either. */
function SessionStopControl({ session, changed }: { session: AgentSession; changed: () => void }) {
  return session.stopped ? (
    <StoppedNote session={session} onResumed={changed} />
  ) : (
    <StopSessionButton sessionId={session.sessionId} compact onStopped={changed} />
  );
}

/** `fn` at most once per `ms`, trailing. */
function useDebounced(fn: () => void, ms: number): () => void {
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const latest = useRef(fn);
  latest.current = fn;
  useEffect(() => () => clearTimeout(timer.current), []);
  return () => {
    clearTimeout(timer.current);
    timer.current = setTimeout(() => latest.current(), ms);
  };
}
