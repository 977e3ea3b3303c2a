/**
 * Deciding several pending requests at once, from the board: the selection, the bar that picks
 * what to apply, a pre-flight table of exactly what will be sent (tool, the whole command or
 * input, wrapped and never clipped, session, owner, the option applied to each), and the answer
 * per request after Confirm. An allow leaves out, saying why, every request the table cannot
 * show whole: one with a diff (open its card), or one cut to the stored-bytes limit. One
 * `POST /v1/approvals/decisions`; the server decides each item as a single decision, so a request
 * that changed, was decided meanwhile, or needs more than this answers for itself.
 *
 * Owns: the selection and the batch screens. Does not own: the board's rows (Board.tsx) or what
 * a decision checks (the server).
 */
import { useState } from "preact/hooks";
import { argumentLines } from "../../../sdk/src/rules";
import { type ApiError, api, type DecisionBatchResult, type PendingApproval } from "../api";
import { Banner } from "../components/Banner";
import { ReasonField } from "../components/ReasonField";
import { SafeText } from "../components/SafeText";
import { asRecord } from "../components/ToolContent";
import { describeApproval, optionWords } from "../format";
import { type PrivateState, readable, useSeen } from "../private/use-private";

/** What the person chose to apply to every selected request: each one's own option of that kind. */
type Verdict = "allow_once" | "reject_once";

const VERDICT_WORDS: Record<Verdict, string> = { allow_once: "Allow once", reject_once: "Deny" };

/** The selected ids, kept only while their request is still on the board. */
export function useSelection(onBoard: PendingApproval[]) {
  const [ids, setIds] = useState<Set<string>>(new Set());
  const selected = onBoard.filter((a) => ids.has(a.id));
  const toggle = (id: string, on: boolean) =>
    setIds((prev) => {
      const next = new Set(prev);
      if (on) next.add(id);
      else next.delete(id);
      return next;
    });
  const setMany = (list: string[], on: boolean) =>
    setIds((prev) => {
      const next = new Set(prev);
      for (const id of list) {
        if (on) next.add(id);
        else next.delete(id);
      }
      return next;
    });
  return { selected, has: (id: string) => ids.has(id), toggle, setMany, clear: () => setIds(new Set()) };
}

/** A row's checkbox; its click never opens the row. */
export function SelectBox({
  label,
  checked,
  onChange,
}: {
  label: string;
  checked: boolean;
  onChange: (on: boolean) => void;
}) {
  return (
    <input
      type="checkbox"
      class="select-box"
      aria-label={label}
      checked={checked}
      onClick={(e) => e.stopPropagation()}
      onChange={(e) => onChange(e.currentTarget.checked)}
    />
  );
}

export function BatchBar({
  selected,
  memberName,
  onClear,
}: {
  selected: PendingApproval[];
  memberName: (a: PendingApproval) => string;
  onClear: () => void;
}) {
  const [verdict, setVerdict] = useState<Verdict | null>(null);
  const [results, setResults] = useState<{ sent: PendingApproval[]; results: DecisionBatchResult[] } | null>(null);
  if (results) return <BatchResults {...results} onClose={() => setResults(null)} />;
  if (selected.length === 0) return null;
  if (verdict) {
    return (
      <PreFlight
        verdict={verdict}
        selected={selected}
        memberName={memberName}
        onCancel={() => setVerdict(null)}
        onDone={(sent, answer) => {
          setVerdict(null);
          setResults({ sent, results: answer });
          onClear();
        }}
      />
    );
  }
  return (
    <div class="batch-bar" data-testid="batch-bar">
      <strong data-testid="batch-count">{selected.length} selected</strong>
      <button type="button" class="button secondary" onClick={() => setVerdict("allow_once")} data-testid="batch-allow">
        Allow once…
      </button>
      <button type="button" class="button danger" onClick={() => setVerdict("reject_once")} data-testid="batch-deny">
        Deny…
      </button>
      <button type="button" class="link-button" onClick={onClear} data-testid="batch-clear">
        Clear selection
      </button>
    </div>
  );
}

/** The option of `verdict`'s kind this request offers (its first), or none. */
const optionFor = (a: PendingApproval, verdict: Verdict) => a.options.find((o) => o.kind === verdict);

/**
 * Why a request is left out of this batch, or null: its option is not offered, or (for an allow)
 * the table does not show it whole: a diff is on its card only, and a cut request is never allowed.
 */
function leftOut(a: PendingApproval, verdict: Verdict, privateState: PrivateState): string | null {
  if (privateState === "opening") return "private, still opening on this device: left out";
  if (privateState && privateState !== "opened") return "private, and this device could not open it: left out";
  if (!optionFor(a, verdict)) return "not offered: left out";
  if (verdict !== "allow_once") return null;
  const { truncated, toolCall } = a.snapshot;
  if (truncated) return `too large to review here: ${truncated.bytesNotStored} bytes not stored: left out`;
  const content = Array.isArray(toolCall.content) ? toolCall.content : [];
  if (content.some((c) => asRecord(c).type === "diff"))
    return "its diff is not shown here: open it to decide; left out";
  return null;
}

/** The whole command, else every argument (one per line): what an allow would let run. */
function whatRuns(a: PendingApproval): string {
  const command = asRecord(a.snapshot.toolCall.rawInput).command;
  if (typeof command === "string") return command;
  return argumentLines(a.snapshot.toolCall).join("\n") || "—";
}

function PreFlight({
  verdict,
  selected,
  memberName,
  onCancel,
  onDone,
}: {
  verdict: Verdict;
  selected: PendingApproval[];
  memberName: (a: PendingApproval) => string;
  onCancel: () => void;
  onDone: (sent: PendingApproval[], results: DecisionBatchResult[]) => void;
}) {
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // Private rows as this device opened them; one that did not open is never sent.
  const rows = useSeen(selected).map((s) => ({
    a: s.approval,
    hidden: !readable(s),
    excluded: leftOut(s.approval, verdict, s.private),
  }));
  const sendable = rows.filter((r) => r.excluded === null).map((r) => r.a);
  const confirm = async () => {
    setBusy(true);
    setError(null);
    const text = reason.trim();
    try {
      const { results } = await api.decideBatch(
        sendable.map((a) => ({
          approvalId: a.id,
          optionId: (optionFor(a, verdict) as { optionId: string }).optionId,
          requestHash: a.requestHash,
          ...(text && { reason: text }),
        })),
      );
      onDone(sendable, results);
    } catch (e) {
      setError((e as ApiError).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="panel batch" data-testid="batch-preflight" aria-label="Check before deciding">
      <h2 class="section-title">
        {VERDICT_WORDS[verdict]}: {sendable.length} request{sendable.length === 1 ? "" : "s"}
      </h2>
      <p class="muted small">Check each one. Nothing is sent until you confirm.</p>
      <div class="table-wrap">
        <table class="table" data-testid="preflight-table">
          <thead>
            <tr>
              <th>Tool</th>
              <th>Command or input</th>
              <th>Session</th>
              <th>Owner</th>
              <th>Applies</th>
            </tr>
          </thead>
          <tbody>
            {rows.map(({ a, hidden, excluded }) => {
              const d = describeApproval(a);
              const option = optionFor(a, verdict);
              return (
                <tr key={a.id} data-testid={`preflight-${a.id}`}>
                  <td class="clip">
                    <SafeText text={hidden ? "Private request" : d.title} />
                  </td>
                  <td class="preflight-runs" data-testid="preflight-command">
                    <SafeText text={hidden ? "—" : whatRuns(a)} block whole />
                  </td>
                  <td class="clip">
                    <SafeText text={d.sessionTitle} />
                  </td>
                  <td class="nowrap">{memberName(a)}</td>
                  <td data-testid="preflight-option">
                    {option && !excluded ? (
                      <>
                        {optionWords(option.kind, option.optionId).label}
                        {option.name && (
                          <span class="muted small">
                            {" "}
                            (“
                            <SafeText text={option.name} />
                            ”)
                          </span>
                        )}
                      </>
                    ) : (
                      <span class="row-error" data-testid="preflight-left-out">
                        {excluded}
                      </span>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <ReasonField value={reason} onInput={setReason} />
      {error && (
        <Banner tone="error" testId="batch-error">
          {error}
        </Banner>
      )}
      <div class="form-actions">
        <button
          type="button"
          class={verdict === "allow_once" ? "button primary" : "button danger"}
          disabled={busy || sendable.length === 0}
          onClick={() => void confirm()}
          data-testid="batch-confirm"
        >
          Confirm: {VERDICT_WORDS[verdict].toLowerCase()} {sendable.length}
        </button>
        <button type="button" class="button secondary" onClick={onCancel} disabled={busy} data-testid="batch-cancel">
          Back
        </button>
      </div>
    </section>
  );
}

/** Words for an item's answer: what a single decision's status would have meant. */
function resultWords(r: DecisionBatchResult): string {
  if (r.status === 200) return r.approval?.state === "allowed" ? "Allowed" : "Denied";
  switch (r.error) {
    case "already_decided":
      return "Someone already decided it";
    case "already_resolved":
      return "It ended before the decision";
    case "request_changed":
      return "It changed: open it and check again";
    case "not_found":
      return "Not found";
    default:
      return r.message ?? `Refused (${r.status})`;
  }
}

function BatchResults({
  sent,
  results,
  onClose,
}: {
  sent: PendingApproval[];
  results: DecisionBatchResult[];
  onClose: () => void;
}) {
  const byId = new Map(sent.map((a) => [a.id, a]));
  const failed = results.filter((r) => r.status !== 200).length;
  return (
    <section class="panel batch" data-testid="batch-results">
      <h2 class="section-title">
        {results.length - failed} decided{failed > 0 ? `, ${failed} not` : ""}
      </h2>
      <ul class="plain">
        {results.map((r) => {
          const a = byId.get(r.approvalId);
          return (
            <li key={r.approvalId} data-testid={`batch-result-${r.approvalId}`} data-status={r.status}>
              <SafeText text={a ? describeApproval(a).title : r.approvalId} />: {resultWords(r)}
            </li>
          );
        })}
      </ul>
      <button type="button" class="link-button" onClick={onClose} data-testid="batch-results-close">
        Close
      </button>
    </section>
  );
}
