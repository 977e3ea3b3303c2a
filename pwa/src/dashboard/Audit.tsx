/** The team's append-only audit log, newest first, and a check of its hash chain. */
import { useEffect, useState } from "preact/hooks";
import { type ApiError, type AuditEntry, type AuditVerdict, api, isAdmin } from "../api";
import { Banner } from "../components/Banner";
import { SafeText } from "../components/SafeText";
import { prettyJson } from "../components/ToolContent";
import { dateTime } from "../format";
import { useMe } from "../session";
import { useMembers } from "./Board";
import { Empty, LoadError, PageHead, shortDate } from "./ui";

export function Audit() {
  const me = useMe();
  const members = useMembers();
  const [entries, setEntries] = useState<AuditEntry[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<ApiError | null>(null);
  const [verdict, setVerdict] = useState<AuditVerdict | null>(null);
  const [verifying, setVerifying] = useState(false);
  const [verifyError, setVerifyError] = useState<string | null>(null);

  const load = async (from: string | null) => {
    setLoading(true);
    try {
      const page = await api.audit(from);
      setEntries((prev) => (from ? [...prev, ...page.entries] : page.entries));
      setCursor(page.cursor);
      setError(null);
    } catch (e) {
      setError(e as ApiError);
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => void load(null), []);

  const verify = async () => {
    setVerifying(true);
    setVerifyError(null);
    try {
      setVerdict(await api.verifyAudit());
    } catch (e) {
      setVerifyError((e as Error).message);
    } finally {
      setVerifying(false);
    }
  };

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
        sub="Append-only: each entry carries the SHA-256 of the one before it, so an edited or deleted row breaks the chain."
        actions={
          <button
            type="button"
            class="button primary compact"
            onClick={verify}
            disabled={verifying}
            data-testid="audit-verify"
          >
            {verifying ? "Verifying…" : "Verify chain"}
          </button>
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
      {verdict?.ok === false && (
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
      {error && <LoadError error={error} testId="audit-error" onRetry={() => void load(null)} />}
      {!loading && !error && entries.length === 0 && <Empty title="No entries yet" testId="audit-empty" />}
      {entries.length > 0 && (
        <div class="table-wrap">
          <table class="table" data-testid="audit-table">
            <thead>
              <tr>
                <th class="num">#</th>
                <th>When</th>
                <th>Actor</th>
                <th>Action</th>
                <th>Subject</th>
                <th>Detail</th>
                <th>Hash</th>
              </tr>
            </thead>
            <tbody>
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
                  <td class="mono small muted" title={e.hash}>
                    {e.hash ? `${e.hash.slice(0, 10)}…` : "—"}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div class="pager">
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
  );
}

function compact(detail: unknown): string {
  if (typeof detail === "string") return detail;
  const json = prettyJson(detail).replace(/\s*\n\s*/g, " ");
  return json.length > 160 ? `${json.slice(0, 159)}…` : json;
}
