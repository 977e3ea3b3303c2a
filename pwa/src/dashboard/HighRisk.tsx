/**
 * The policy's risk tier settings: the high-risk patterns (globs over a request's kind, command,
 * title, the paths it writes and its tool's input; every field a pattern names must match) and
 * how many people must allow such a request. Part of the Policy screen; saved with the rest of
 * the policy.
 */
import { DEFAULT_HIGH_RISK, type HighRiskPattern, type TeamPolicy } from "../api";

const FIELDS = ["command", "kind", "title", "writes", "input"] as const;
const PLACEHOLDER = {
  command: "e.g. git push --force*",
  kind: "e.g. delete",
  title: "e.g. *production*",
  writes: "e.g. .ssh/*",
  input: "e.g. *DROP TABLE*",
};

/** Drops empty fields, and patterns left with none (the server refuses those). */
export function cleanPatterns(patterns: HighRiskPattern[]): HighRiskPattern[] {
  return patterns
    .map((p) => Object.fromEntries(FIELDS.flatMap((f) => (p[f]?.trim() ? [[f, p[f]?.trim()]] : []))) as HighRiskPattern)
    .filter((p) => FIELDS.some((f) => p[f] !== undefined));
}

export function HighRiskFields({
  patterns,
  quorum,
  onChange,
}: {
  patterns: HighRiskPattern[];
  quorum: TeamPolicy["highRiskQuorum"];
  onChange: (next: Pick<TeamPolicy, "highRisk" | "highRiskQuorum">) => void;
}) {
  const setPattern = (i: number, field: (typeof FIELDS)[number], value: string) =>
    onChange({
      highRisk: patterns.map((p, j) => (j === i ? { ...p, [field]: value || undefined } : p)),
      highRiskQuorum: quorum,
    });
  return (
    <div class="setting high-risk" data-testid="policy-high-risk">
      <div>
        <p class="setting-title">High-risk requests</p>
        <p class="muted small">
          A request matching any pattern is high-risk: the card, board and notification mark it, the lock screen offers
          no action, no rule allows it, and allowing it asks for a passkey bound to that request. Globs: <code>*</code>{" "}
          any text, <code>?</code> one character, case ignored. A command pattern is tried on every command the line
          runs (<code>cd x &amp;&amp; rm -rf y</code>, <code>bash -c '…'</code>, <code>$(…)</code>, <code>sudo …</code>,
          quotes removed, <code>/usr/bin/git</code> as <code>git</code>); <code>writes</code> on every path the request
          may write (<code>.ssh/*</code> matches <code>~/.ssh/config</code>); <code>input</code> on every string in the
          tool's input. Every field a pattern fills must match.
        </p>
      </div>
      <div class="setting-control">
        <table class="table compact" data-testid="policy-high-risk-patterns">
          <thead>
            <tr>
              {FIELDS.map((f) => (
                <th key={f}>{f}</th>
              ))}
              <th>
                <span class="visually-hidden">remove</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {patterns.map((p, i) => (
              <tr key={i} data-testid={`policy-high-risk-${i}`}>
                {FIELDS.map((f) => (
                  <td key={f}>
                    <input
                      type="text"
                      maxLength={f === "kind" ? 64 : 256}
                      value={p[f] ?? ""}
                      placeholder={FIELDS.every((g) => !p[g]) ? PLACEHOLDER[f] : undefined}
                      aria-label={`pattern ${i + 1} ${f}`}
                      onInput={(e) => setPattern(i, f, e.currentTarget.value)}
                      data-testid={`policy-high-risk-${i}-${f}`}
                    />
                  </td>
                ))}
                <td>
                  <button
                    type="button"
                    class="button secondary small"
                    onClick={() => onChange({ highRisk: patterns.filter((_, j) => j !== i), highRiskQuorum: quorum })}
                  >
                    Remove
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <div class="form-actions">
          <button
            type="button"
            class="button secondary"
            onClick={() => onChange({ highRisk: [...patterns, {}], highRiskQuorum: quorum })}
            data-testid="policy-high-risk-add"
          >
            Add pattern
          </button>
          <button
            type="button"
            class="button secondary"
            onClick={() => onChange({ highRisk: DEFAULT_HIGH_RISK, highRiskQuorum: quorum })}
          >
            Restore defaults
          </button>
        </div>
        <label class="inline-input">
          People who must allow it
          <select
            value={String(quorum)}
            onChange={(e) => onChange({ highRisk: patterns, highRiskQuorum: e.currentTarget.value === "2" ? 2 : 1 })}
            data-testid="policy-high-risk-quorum"
          >
            <option value="1">One (with their passkey)</option>
            <option value="2">Two different people (each with a passkey)</option>
          </select>
        </label>
      </div>
    </div>
  );
}
