/**
 * The policy screen's escalation ladder: each step's delay, whom it reaches and how, added,
 * changed or removed. Steps are saved sorted by their delay (the server refuses them otherwise).
 *
 * Owns: the editor. Does not own: the rules (`sdk/src/human/policy.ts`) or saving (`Policy.tsx`).
 */
import { CHANNEL_NAMES, CHANNELS } from "../../../sdk/src/human/channels";
import type { Member, TeamPolicy } from "../api";

type Step = TeamPolicy["escalation"][number];

/** The most steps a ladder may have (`MAX_ESCALATION_STEPS`). */
const MAX_STEPS = 8;

export function sortedLadder(steps: Step[]): Step[] {
  return [...steps].sort((a, b) => a.afterMs - b.afterMs);
}

export function EscalationFields({
  steps,
  members,
  onChange,
}: {
  steps: Step[];
  members: Map<string, Member>;
  onChange: (steps: Step[]) => void;
}) {
  const change = (i: number, step: Partial<Step>) => onChange(steps.map((s, j) => (j === i ? { ...s, ...step } : s)));
  const targetOf = (s: Step) => (Array.isArray(s.to) ? `members:${s.to.join(",")}` : s.to);
  const toOf = (value: string): Step["to"] =>
    value.startsWith("members:") ? value.slice("members:".length).split(",") : (value as "session_owner");
  return (
    <div data-testid="policy-escalation">
      <ol class="plain ladder">
        {steps.map((s, i) => (
          <li key={i} class="inline-input" data-testid={`escalation-step-${i}`}>
            after{" "}
            <input
              type="number"
              min={0}
              max={86_400}
              step={1}
              required
              value={Math.round(s.afterMs / 1000)}
              onInput={(e) =>
                change(i, { afterMs: Math.max(0, Math.round(Number(e.currentTarget.value) || 0)) * 1000 })
              }
              data-testid={`escalation-after-${i}`}
            />{" "}
            s,{" "}
            <select
              value={s.via}
              onChange={(e) => change(i, { via: e.currentTarget.value as Step["via"] })}
              data-testid={`escalation-via-${i}`}
            >
              <option value="push">push</option>
              <option value="email">mail</option>
              {CHANNELS.map((c) => (
                <option key={c} value={c}>
                  {CHANNEL_NAMES[c]}
                </option>
              ))}
            </select>{" "}
            <select
              value={targetOf(s)}
              onChange={(e) => change(i, { to: toOf(e.currentTarget.value) })}
              data-testid={`escalation-to-${i}`}
            >
              <option value="session_owner">the session's owner</option>
              <option value="all_approvers">every approver</option>
              {Array.isArray(s.to) && s.to.length > 1 && (
                <option value={targetOf(s)}>{s.to.map((id) => members.get(id)?.name ?? id).join(", ")}</option>
              )}
              {[...members.values()].map((m) => (
                <option key={m.userId} value={`members:${m.userId}`}>
                  {m.name}
                </option>
              ))}
            </select>{" "}
            <button
              type="button"
              class="button secondary small"
              disabled={steps.length <= 1}
              onClick={() => onChange(steps.filter((_, j) => j !== i))}
              data-testid={`escalation-remove-${i}`}
            >
              Remove
            </button>
          </li>
        ))}
      </ol>
      <button
        type="button"
        class="button secondary small"
        disabled={steps.length >= MAX_STEPS}
        onClick={() => {
          const last = steps.at(-1);
          onChange([...steps, { afterMs: (last?.afterMs ?? 0) + 60_000, to: "session_owner", via: "push" }]);
        }}
        data-testid="escalation-add"
      >
        Add step
      </button>
      <p class="muted small">
        The ladder stops once someone who may decide has seen the request (a phone showed it, or an open app) or it
        ends. A mail only links to the card; it decides nothing.
      </p>
    </div>
  );
}
