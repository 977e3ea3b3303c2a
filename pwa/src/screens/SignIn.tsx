import { startAuthentication } from "@simplewebauthn/browser";
import { useEffect, useState } from "preact/hooks";
import { api, type LinkPreview, type SignedInAsOther, signedInAsOther } from "../api";
import { Banner } from "../components/Banner";
import { passkeyError } from "../components/CreatePasskey";
import { Field } from "../components/Field";
import { SwitchAccount } from "../components/SwitchAccount";
import { Link, navigate, safeNext } from "../router";
import { useAction } from "../use-action";
import { useMe, useViewer } from "../viewer";

// The link may open in another tab, or after the app was closed: remember where to go on.
const NEXT_KEY = "tapgate.next";

/** Where the mailed link should land once confirmed (e.g. back on an invite). */
export function rememberNext(path: string): void {
  localStorage.setItem(NEXT_KEY, safeNext(path));
}

export function SignIn({ token, next }: { token: string | null; next: string | null }) {
  const { viewer, refresh } = useViewer();
  const done = async (to: string) => {
    await refresh();
    navigate(safeNext(to), { replace: true });
  };

  useEffect(() => {
    if (viewer.status === "signed-in" && !token) navigate(safeNext(next), { replace: true });
  }, [viewer.status, token, next]);

  return (
    <section class="screen narrow" data-testid="screen-signin">
      <h1>Sign in to Tapgate</h1>
      {token ? (
        <ConfirmLink token={token} onDone={done} />
      ) : (
        <>
          <PasskeySignIn onDone={() => done(next ?? "/")} />
          <p class="or">or</p>
          <EmailSignIn next={next} />
          <p class="muted">
            New here?{" "}
            <Link href={next ? `/signup?next=${encodeURIComponent(next)}` : "/signup"}>Create an account</Link>
          </p>
        </>
      )}
    </section>
  );
}

/**
 * Mail scanners open links: only this button's POST consumes the token. The page first says which
 * account the link signs in; a browser signed in as another account is asked to switch.
 */
function ConfirmLink({ token, onDone }: { token: string; onDone: (next: string) => Promise<void> }) {
  const me = useMe();
  const [preview, setPreview] = useState<LinkPreview | null>(null);
  const [asking, setAsking] = useState<SignedInAsOther | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api.linkPreview(token).then(setPreview, (e: Error) => setError(e.message));
  }, [token]);
  const confirm = async (switching: boolean) => {
    setBusy(true);
    setError(null);
    try {
      await api.confirmLink(token, switching);
      const next = localStorage.getItem(NEXT_KEY);
      localStorage.removeItem(NEXT_KEY);
      await onDone(next ?? "/");
    } catch (e) {
      const other = signedInAsOther(e);
      if (other) setAsking(other);
      else setError((e as Error).message);
      setBusy(false);
    }
  };
  const other =
    asking ??
    (me && preview && me.user.email !== preview.email
      ? { account: { email: preview.email, name: null }, signedInAs: { email: me.user.email, name: me.user.name } }
      : null);
  if (other && !error) {
    return (
      <SwitchAccount
        accounts={other}
        busy={busy}
        onContinue={() => void confirm(true)}
        onStay={() => navigate("/", { replace: true })}
      />
    );
  }
  return (
    <div class="stack">
      {preview ? (
        <p data-testid="link-account">
          {preview.purpose === "signup" ? "This link finishes creating the account for " : "This link signs you in as "}
          <strong>{preview.email}</strong>. Confirm to continue on this device.
        </p>
      ) : (
        <p>Confirm to finish signing in on this device.</p>
      )}
      <button
        type="button"
        class="button primary wide"
        onClick={() => void confirm(false)}
        disabled={busy}
        data-testid="confirm-link"
      >
        {busy ? "Signing in…" : "Continue"}
      </button>
      {error && (
        <Banner tone="error" testId="signin-error">
          {error} <Link href="/signin">Ask for a new link</Link>
        </Banner>
      )}
    </div>
  );
}

function PasskeySignIn({ onDone }: { onDone: () => Promise<void> }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const signIn = async () => {
    setBusy(true);
    setError(null);
    try {
      const { challengeId, options } = await api.passkeyLoginOptions();
      const response = await startAuthentication({ optionsJSON: options });
      await api.passkeyLoginVerify(challengeId, response);
      await onDone();
    } catch (e) {
      setError(passkeyError(e));
      setBusy(false);
    }
  };
  return (
    <div class="stack">
      <button type="button" class="button primary wide" onClick={signIn} disabled={busy} data-testid="passkey-signin">
        {busy ? "Waiting for your passkey…" : "Sign in with a passkey"}
      </button>
      {error && (
        <Banner tone="error" testId="passkey-error">
          {error}
        </Banner>
      )}
    </div>
  );
}

function EmailSignIn({ next }: { next: string | null }) {
  const [email, setEmail] = useState("");
  const [sent, setSent] = useState(false);
  const { busy, error, run } = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    return run(async () => {
      await api.signIn(email.trim());
      if (next) localStorage.setItem(NEXT_KEY, safeNext(next));
      setSent(true);
    });
  };
  if (sent) {
    return (
      <Banner tone="ok" testId="check-email">
        Check your email: if {email} has an account, a sign-in link is on its way. Open it on this device.
      </Banner>
    );
  }
  return (
    <form class="stack" onSubmit={submit} data-testid="email-signin">
      <Field label="Email">
        <input
          type="email"
          required
          autocomplete="email webauthn"
          value={email}
          onInput={(e) => setEmail(e.currentTarget.value)}
          data-testid="signin-email"
        />
      </Field>
      <button type="submit" class="button secondary wide" disabled={busy} data-testid="email-signin-submit">
        Email me a sign-in link
      </button>
      {error && (
        <Banner tone="error" testId="signin-error">
          {error}
        </Banner>
      )}
    </form>
  );
}
