import type { SignedInAsOther } from "../api";
import { Banner } from "./Banner";

const label = (a: { email: string; name: string | null }) => (a.name ? `${a.name} (${a.email})` : a.email);

/**
 * Before a link signs this browser in as another account than the one signed in (login CSRF: a
 * link someone else sent would quietly swap accounts): names both and lets the person choose.
 */
export function SwitchAccount({
  accounts,
  busy,
  onContinue,
  onStay,
}: {
  accounts: SignedInAsOther;
  busy: boolean;
  onContinue: () => void;
  onStay: () => void;
}) {
  return (
    <div class="stack" data-testid="switch-account">
      <Banner tone="warn" testId="switch-account-notice">
        This link signs you in as <strong data-testid="switch-account-to">{label(accounts.account)}</strong>. You are
        signed in as <strong data-testid="switch-account-from">{label(accounts.signedInAs)}</strong>.
      </Banner>
      <p class="muted">Continue only if you asked for this link yourself.</p>
      <button
        type="button"
        class="button primary wide"
        onClick={onContinue}
        disabled={busy}
        data-testid="switch-continue"
      >
        {busy ? "Switching…" : `Continue as ${accounts.account.email}`}
      </button>
      <button type="button" class="button secondary wide" onClick={onStay} disabled={busy} data-testid="switch-stay">
        Stay signed in as {accounts.signedInAs.email}
      </button>
    </div>
  );
}
