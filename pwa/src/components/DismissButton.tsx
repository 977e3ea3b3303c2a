/**
 * The card's "Dismiss": the decider ends the request without choosing one of the agent's options.
 * It is answered ACP's `cancelled` (hooks and MCP hear a deny), which every agent treats as not
 * allowed; the button says so, and is styled as neither an allow nor a deny.
 *
 * Owns: the button and its words. Does not own: the decision (the card's `onDismiss`, `POST
 * /v1/approvals/:id/decision {dismiss: true}`; docs/human-api.md).
 */
export function DismissButton({ busy, onDismiss }: { busy: string | null; onDismiss: () => void }) {
  return (
    <button
      type="button"
      class="option dismiss"
      disabled={busy !== null}
      aria-busy={busy === "dismiss"}
      onClick={onDismiss}
      data-testid="option-dismiss"
    >
      <span data-testid="option-label">Dismiss</span>
      <span class="option-note" data-testid="dismiss-note">
        The agent is told the question was dismissed, and treats that as not allowed.
      </span>
    </button>
  );
}
