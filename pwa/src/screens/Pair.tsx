import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { api, type ConfirmRequired, confirmRequired, type SignedInAsOther, signedInAsOther } from "../api";
import { useNow } from "../clock";
import { Banner } from "../components/Banner";
import { Countdown } from "../components/Countdown";
import { CreatePasskey } from "../components/CreatePasskey";
import { EnableNotifications } from "../components/EnableNotifications";
import { SwitchAccount } from "../components/SwitchAccount";
import { withReauth } from "../reauth";
import { Link, navigate } from "../router";
import { useMe, useViewer } from "../viewer";

/** On the signed-in desktop: a one-time QR code (and link) that signs a phone in. */
export function PairDesktop() {
  const [pairing, setPairing] = useState<{ url: string; expiresAt: number } | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const now = useNow();
  const create = async () => {
    setBusy(true);
    setError(null);
    try {
      setPairing(await withReauth(() => api.createPairing()));
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const expired = pairing !== null && pairing.expiresAt <= now;
  return (
    <section class="screen narrow" data-testid="screen-pair">
      <h1>Add a phone</h1>
      <p>Scan the code with your phone's camera. It signs the phone in to your account once, within 5 minutes.</p>
      {pairing && !expired && (
        <div class="pairing" data-testid="pairing">
          <QrCanvas text={pairing.url} />
          <p class="muted small">Or open this link on the phone:</p>
          <p class="break" data-testid="pairing-link">
            {pairing.url}
          </p>
          <Countdown expiresAt={pairing.expiresAt} testId="pairing-countdown" />
        </div>
      )}
      {expired && (
        <Banner tone="warn" testId="pairing-expired">
          That code expired. Make a new one.
        </Banner>
      )}
      {(!pairing || expired) && (
        <button type="button" class="button primary wide" onClick={create} disabled={busy} data-testid="create-pairing">
          {pairing ? "Make a new code" : "Show a pairing code"}
        </button>
      )}
      {error && (
        <Banner tone="error" testId="pairing-error">
          {error}
        </Banner>
      )}
    </section>
  );
}

function QrCanvas({ text }: { text: string }) {
  const ref = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    const canvas = ref.current;
    // Loaded here only: the encoder is a third of the bundle and only this screen needs it.
    if (canvas)
      void import("qrcode").then((qr) =>
        qr.toCanvas(canvas, text, { width: 264, margin: 2, errorCorrectionLevel: "M" }),
      );
  }, [text]);
  return <canvas ref={ref} class="qr" role="img" aria-label="Pairing QR code" data-testid="pairing-qr" />;
}

/**
 * On the phone that opened the pairing link: ask the server whom it signs in (nothing is signed in
 * yet), name that account, and claim it only on the person's tap; then set up. A browser signed in
 * as someone else is asked to switch instead, naming both accounts.
 */
export function PairClaim({ token }: { token: string }) {
  const { refresh } = useViewer();
  const [error, setError] = useState<string | null>(null);
  const [asking, setAsking] = useState<SignedInAsOther | null>(null);
  const [confirming, setConfirming] = useState<ConfirmRequired | null>(null);
  const [busy, setBusy] = useState(false);
  const claim = useCallback(
    async (confirm: boolean) => {
      setBusy(true);
      try {
        await api.claimPairing(token, confirm);
        await refresh();
        // The token is spent: take it out of the address bar and history.
        navigate("/pair?step=setup", { replace: true });
      } catch (e) {
        const other = signedInAsOther(e);
        const account = confirmRequired(e);
        if (other) setAsking(other);
        else if (account) setConfirming(account);
        else setError((e as Error).message);
        setBusy(false);
      }
    },
    [token, refresh],
  );
  const started = useRef(false);
  useEffect(() => {
    if (started.current) return;
    started.current = true;
    void claim(false);
  }, [claim]);

  if (asking && !error) {
    return (
      <section class="screen narrow" data-testid="screen-pair-claim">
        <h1>Switch accounts?</h1>
        <SwitchAccount
          accounts={asking}
          busy={busy}
          onContinue={() => void claim(true)}
          onStay={() => navigate("/", { replace: true })}
        />
      </section>
    );
  }
  if (confirming && !error) {
    const { email, name } = confirming.account;
    return (
      <section class="screen narrow" data-testid="screen-pair-claim">
        <h1>Sign this phone in?</h1>
        <p data-testid="pair-account">
          This signs this phone in as <strong>{name ?? email}</strong>
          {name ? ` (${email})` : ""}. Go on only if you made this code on your own computer just now.
        </p>
        <button
          type="button"
          class="button primary wide"
          disabled={busy}
          onClick={() => void claim(true)}
          data-testid="pair-confirm"
        >
          Sign in as {name ?? email}
        </button>
        <button
          type="button"
          class="button secondary wide"
          disabled={busy}
          onClick={() => navigate("/", { replace: true })}
          data-testid="pair-cancel"
        >
          Not me
        </button>
      </section>
    );
  }
  if (!error) return <p class="muted center">Checking this pairing code…</p>;
  return (
    <section class="screen narrow" data-testid="screen-pair-claim">
      <h1>Could not pair</h1>
      <Banner tone="error" testId="pairing-error">
        {error} Make a new code on your computer and scan it again.
      </Banner>
    </section>
  );
}

/** The freshly paired phone: offer a passkey and notifications. */
export function PairSetup() {
  const me = useMe();
  return (
    <section class="screen narrow" data-testid="screen-pair-setup">
      <h1>This phone is signed in</h1>
      {me && <p>Welcome, {me.user.name}. Two more steps make approving from here fast:</p>}
      <section class="panel">
        <h2>1. Create a passkey</h2>
        <p class="muted">Sign in on this phone next time with your fingerprint or face.</p>
        <CreatePasskey />
      </section>
      <section class="panel">
        <h2>2. Enable notifications</h2>
        <EnableNotifications />
      </section>
      <Link href="/" class="button secondary wide" data-testid="pair-done">
        Done
      </Link>
    </section>
  );
}
