/** The team's append-only audit log, newest first, and a check of its hash chain. */
import { useState } from "preact/hooks";
import { type AuditVerdict, api, isAdmin } from "../api";
import { Banner } from "../components/Banner";
import { SafeText } from "../components/SafeText";
import { prettyJson } from "../components/ToolContent";
import { dateTime } from "../format";
import { usePaged } from "../paged";
import { useAction } from "../use-action";
import { useMe } from "../viewer";
import { useMembers } from "./Board";
import { DataTable, Empty, LoadError, PageHead, Pager, shortDate } from "./ui";

export function Audit() {
  const me = useMe();
  const members = useMembers();
  const list = usePaged((from) => api.audit(from).then((page) => ({ items: page.entries, cursor: page.cursor })));
  const { items: entries, loading, error } = list;
  const [verdict, setVerdict] = useState<AuditVerdict | null>(null);
  const { busy: verifying, error: verifyError, run } = useAction();
  const verify = () => run(async () => setVerdict(await api.verifyAudit()));

  /** "user:usr_…" → the member's name; other actors as they are. */
  const actor = (a: string) => {
    const [kind, id] = a.split(":", 2);
    if (kind === "user" && id) return id === me?.user.id ? "You" : (members.get(id)?.name ?? a);
    return a;
  };

  return (
    <section class="screen dash" data-testid="screen-audit">
      <PageHead
        title="Audit log"
        sub="Append-only: each entry carries the SHA-256 of the one before it, so an edited or deleted row breaks the chain. Keep a downloaded head elsewhere to check the log against it later."
        actions={
          <>
            <a
              class="button secondary compact"
              href="/v1/audit/head"
              download="tapgate-audit-head.json"
              data-testid="audit-download-head"
            >
              Download head
            </a>
            <button
              type="button"
              class="button primary compact"
              onClick={verify}
              disabled={verifying}
              data-testid="audit-verify"
            >
              {verifying ? "Verifying…" : "Verify chain"}
            </button>
          </>
        }
      />
      {me && !isAdmin(me.role) && (
        <Banner tone="info" testId="audit-admin-only">
          Only owners and admins can read the audit log.
        </Banner>
      )}
      {verdict?.ok === true && (
        <Banner tone="ok" testId="audit-verify-result">
          Chain intact: all {verdict.entries.toLocaleString()} entries verified.
        </Banner>
      )}
      {verdict?.ok === false && "mismatch" in verdict && (
        <Banner tone="error" testId="audit-verify-result">
          Chain does not reach its anchored head (entry #{verdict.mismatch.head.seq}): {verdict.mismatch.message}.{" "}
          {verdict.entries.toLocaleString()} entries checked.
        </Banner>
      )}
      {verdict?.ok === false && "brokenAt" in verdict && (
        <Banner tone="error" testId="audit-verify-result">
          Chain broken at entry #{verdict.brokenAt.seq} ({verdict.brokenAt.eventId}):{" "}
          {verdict.brokenAt.reason === "prev_mismatch"
            ? "it does not point at the entry before it"
            : "its content does not match its hash"}
          . {verdict.entries.toLocaleString()} entries checked.
        </Banner>
      )}
      {verifyError && (
        <Banner tone="error" testId="audit-verify-error">
          {verifyError}
        </Banner>
      )}
      {error && <LoadError error={error} testId="audit-error" onRetry={() => void list.load(null)} />}
      {!loading && !error && entries.length === 0 && <Empty title="No entries yet" testId="audit-empty" />}
      {entries.length > 0 && (
        <DataTable
          testId="audit-table"
          head={
            <>
              <th class="num">#</th>
              <th>When</th>
              <th>Actor</th>
              <th>Action</th>
              <th>Subject</th>
              <th>Detail</th>
              <th>Hash</th>
            </>
          }
        >
          {entries.map((e) => (
            <tr key={e.eventId} data-testid={`audit-row-${e.seq ?? e.eventId}`}>
              <td class="num muted">{e.seq ?? ""}</td>
              <td class="nowrap muted" title={dateTime(e.at)}>
                {shortDate(e.at)}
              </td>
              <td class="nowrap">
                <SafeText text={actor(e.actor)} />
              </td>
              <td class="nowrap">
                <code class="action">{e.action}</code>
              </td>
              <td class="clip mono small">{e.subject ? <SafeText text={e.subject} /> : "—"}</td>
              <td class="clip mono small detail-cell">
                {e.detail !== undefined && e.detail !== null ? (
                  <SafeText text={compact(e.detail)} />
                ) : (
                  <span class="muted">—</span>
                )}
              </td>
              <td class="mono small muted" title={e.hash ?? undefined}>
                {e.hash ? `${e.hash.slice(0, 10)}…` : "—"}
              </td>
            </tr>
          ))}
        </DataTable>
      )}
      <Pager list={list} />
    </section>
  );
}

function compact(detail: unknown): string {
  if (typeof detail === "string") return detail;
  const json = prettyJson(detail).replace(/\s*\n\s*/g, " ");
  return json.length > 160 ? `${json.slice(0, 159)}…` : json;
}
