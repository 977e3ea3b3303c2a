/**
 * The team policy: its settings, the risk tiers (HighRisk.tsx) and the escalation ladder
 * (Escalation.tsx); owners and admins change them; they apply to new requests. A change that
 * weakens the policy is an owner's, confirmed with their passkey (step-up.ts runs it when the
 * server asks). The team's limits (quotas) are below them, and only owners change those.
 */
import { useEffect, useState } from "preact/hooks";
import { api, isAdmin, type TeamPolicy } from "../api";
import { Banner } from "../components/Banner";
import { privacySaved } from "../private/privacy";
import { savePolicyWithStepUp } from "../step-up";
import { useMe } from "../viewer";
import { useMembers } from "./Board";
import { EscalationFields, sortedLadder } from "./Escalation";
import { cleanPatterns, HighRiskFields } from "./HighRisk";
import { LimitsFields } from "./Limits";
import { LoadError, PageHead, useLoad } from "./ui";

const MINUTE = 60_000;

export function Policy() {
  const me = useMe();
  const admin = isAdmin(me?.role);
  const owner = me?.role === "owner";
  const loaded = useLoad(() => api.policy());
  const members = useMembers();
  const [form, setForm] = useState<TeamPolicy | null>(null);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ tone: "ok" | "error"; text: string } | null>(null);
  useEffect(() => {
    if (loaded.data) setForm(loaded.data);
  }, [loaded.data]);

  const dirty = form && loaded.data && JSON.stringify(form) !== JSON.stringify(loaded.data);
  const save = async (e: Event) => {
    e.preventDefault();
    if (!form) return;
    setBusy(true);
    setResult(null);
    try {
      const saved = await savePolicyWithStepUp({
        ...form,
        highRisk: cleanPatterns(form.highRisk),
        escalation: sortedLadder(form.escalation),
      });
      loaded.setData(() => ({ ...form, ...(saved && typeof saved === "object" ? saved : {}) }));
      if (me) privacySaved(me.team.id, form.privacy);
      setResult({ tone: "ok", text: "Saved. New requests follow this policy; the change is in the audit log." });
    } catch (err) {
      setResult({ tone: "error", text: (err as Error).message });
    } finally {
      setBusy(false);
    }
  };
  const set = <K extends keyof TeamPolicy>(k: K, v: TeamPolicy[K]) => form && setForm({ ...form, [k]: v });

  return (
    <section class="screen dash" data-testid="screen-policy">
      <PageHead title="Team policy" sub="How requests of this team are offered, announced and decided." />
      {!admin && (
        <Banner tone="info" testId="policy-read-only">
          Only owners and admins can change the policy.
        </Banner>
      )}
      {admin && (
        <p class="muted small" data-testid="policy-weakening-note">
          Removing or narrowing a high-risk pattern, lowering the quorum, widening who decides or showing more on the
          lock screen weakens the policy: only an owner can save that, confirming with their passkey. Every owner is
          told by mail.
        </p>
      )}
      {loaded.error && <LoadError error={loaded.error} testId="policy-error" onRetry={() => void loaded.reload()} />}
      {form && (
        <form class="settings" onSubmit={save} data-testid="policy-form">
          <fieldset disabled={!admin || busy}>
            <Setting
              title="Request lifetime"
              help="How long a request waits for a human before it is denied as expired. An agent may ask for less, never more."
            >
              <span class="inline-input">
                <input
                  type="number"
                  min={1}
                  max={1440}
                  step={1}
                  required
                  value={Math.round(form.lifetimeMs / MINUTE)}
                  onInput={(e) => set("lifetimeMs", Math.round(Number(e.currentTarget.value) || 1) * MINUTE)}
                  data-testid="policy-lifetime"
                />
                minutes
              </span>
            </Setting>
            <Setting
              title="Once-only options"
              help="Offer only “allow once” and “reject once”: standing rules such as “always allow” are hidden from approvers."
            >
              <label class="check">
                <input
                  type="checkbox"
                  checked={form.onceOnlyOptions}
                  onChange={(e) => set("onceOnlyOptions", e.currentTarget.checked)}
                  data-testid="policy-once-only"
                />
                Once-only
              </label>
            </Setting>
            <Setting title="Who is notified" help="Whose devices get a push when a request arrives.">
              <Choice
                value={form.notify}
                onChange={(v) => set("notify", v)}
                testId="policy-notify"
                options={{ session_owner: "The session's owner", all_approvers: "Every approver in the team" }}
              />
            </Setting>
            <Setting title="Who may decide" help="Viewers never decide.">
              <Choice
                value={form.deciders}
                onChange={(v) => set("deciders", v)}
                testId="policy-deciders"
                options={{ any_approver: "Any approver, admin or owner", session_owner: "Only the session's owner" }}
              />
            </Setting>
            <Setting
              title="Lock-screen detail"
              help="What a notification shows on a locked phone. Tool arguments are never sent in a push."
            >
              <Choice
                value={form.lockScreen}
                onChange={(v) => set("lockScreen", v)}
                testId="policy-lock-screen"
                options={{ tool_title: "The tool's title", generic: "“An agent is asking for permission”" }}
              />
            </Setting>
            <Setting
              title="Privacy"
              help="Private: agents seal each request on their machine to your team's devices, and Tapgate routes and records it without reading it. Applies to new requests; earlier ones stay as they were. Only an owner changes it, confirming with their passkey."
            >
              <Choice
                value={form.privacy}
                onChange={(v) => set("privacy", v)}
                testId="policy-privacy"
                label="Privacy"
                disabled={!owner}
                options={{ standard: "Standard", private: "Private: sealed to the team's devices" }}
              />
            </Setting>
            <HighRiskFields
              patterns={form.highRisk}
              quorum={form.highRiskQuorum}
              onChange={(next) => setForm({ ...form, ...next })}
            />
            <Setting
              title="Escalation"
              help="Who is reached, and how, while nobody has seen a request. A person whose Tapgate is open and visible gets the card there instead of a push, and a push 20 s later if they did not look."
            >
              <EscalationFields
                steps={form.escalation}
                members={members}
                onChange={(escalation) => set("escalation", escalation)}
              />
            </Setting>
          </fieldset>
          <fieldset disabled={!owner || busy} data-testid="policy-limits-fieldset">
            <legend class="setting-title">Team limits{owner ? "" : " (only owners change these)"}</legend>
            <LimitsFields limits={form.limits} onChange={(limits) => set("limits", limits)} />
          </fieldset>
          {admin && (
            <div class="form-actions">
              <button type="submit" class="button primary" disabled={!dirty || busy} data-testid="policy-save">
                {busy ? "Saving…" : "Save policy"}
              </button>
              {dirty && (
                <button
                  type="button"
                  class="button secondary"
                  onClick={() => loaded.data && setForm(loaded.data)}
                  data-testid="policy-reset"
                >
                  Discard changes
                </button>
              )}
            </div>
          )}
          {result && (
            <Banner tone={result.tone} testId="policy-result">
              {result.text}
            </Banner>
          )}
        </form>
      )}
    </section>
  );
}

function Setting({ title, help, children }: { title: string; help: string; children: preact.ComponentChildren }) {
  return (
    <div class="setting">
      <div>
        <p class="setting-title">{title}</p>
        <p class="muted small">{help}</p>
      </div>
      <div class="setting-control">{children}</div>
    </div>
  );
}

/** A select over a closed set of values, in the order `options` names them. */
function Choice<V extends string>({
  value,
  onChange,
  options,
  testId,
  label,
  disabled,
}: {
  value: V;
  onChange: (v: V) => void;
  options: Record<V, string>;
  testId: string;
  label?: string;
  disabled?: boolean;
}) {
  return (
    <select
      value={value}
      onChange={(e) => onChange(e.currentTarget.value as V)}
      data-testid={testId}
      aria-label={label}
      disabled={disabled}
    >
      {(Object.entries(options) as Array<[V, string]>).map(([v, label]) => (
        <option key={v} value={v}>
          {label}
        </option>
      ))}
    </select>
  );
}
