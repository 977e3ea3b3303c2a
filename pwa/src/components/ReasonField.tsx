import { DECISION_REASON_CHARS } from "../../../sdk/src/human/approvals";

/**
 * The decider's optional words to the agent, sent with the decision as `reason` and shown to the
 * agent (e.g. why a deny, what to do instead). Folded away until wanted, so the routine tap stays one tap.
 */
export function ReasonField({ value, onInput }: { value: string; onInput: (text: string) => void }) {
  return (
    <details class="reason" data-testid="reason" open={value.length > 0}>
      <summary>Add a reason for the agent</summary>
      <label class="field">
        <span>Reason (the agent reads it; {DECISION_REASON_CHARS - value.length} characters left)</span>
        <textarea
          rows={2}
          maxLength={DECISION_REASON_CHARS}
          value={value}
          onInput={(e) => onInput(e.currentTarget.value)}
          data-testid="reason-input"
        />
      </label>
    </details>
  );
}
