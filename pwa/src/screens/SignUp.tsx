import { startRegistration } from "@simplewebauthn/browser";
import { useState } from "preact/hooks";
import { api } from "../api";
import { Banner } from "../components/Banner";
import { passkeyError } from "../components/CreatePasskey";
import { Field } from "../components/Field";
import { guessDeviceName } from "../device";
import { Link } from "../router";
import { rememberNext } from "./SignIn";

/**
 * Create an account and team. Either way the address is confirmed by the mailed link; a passkey
 * made here is parked on that link and works once it is opened.
 */
export function SignUp() {
  const [form, setForm] = useState({ email: "", name: "", team: "" });
  const [busy, setBusy] = useState<"passkey" | "email" | null>(null);
  const [sent, setSent] = useState<"passkey" | "email" | null>(null);
  const [error, setError] = useState<string | null>(null);

  const fields = () => ({ email: form.email.trim(), name: form.name.trim(), team: form.team.trim() });
  const run = async (how: "passkey" | "email") => {
    // Came from an invite: the confirmed link brings the new account back there.
    const next = new URLSearchParams(location.search).get("next");
    if (next) rememberNext(next);
    setBusy(how);
    setError(null);
    try {
      if (how === "passkey") {
        const { challengeId, options } = await api.passkeyRegisterOptions(fields());
        const response = await startRegistration({ optionsJSON: options });
        await api.passkeyRegisterVerify(challengeId, response, await guessDeviceName());
      } else {
        await api.signUp(fields());
      }
      setSent(how);
    } catch (e) {
      setError(how === "passkey" ? passkeyError(e) : (e as Error).message);
    } finally {
      setBusy(null);
    }
  };
  const onSubmit = (e: SubmitEvent) => {
    e.preventDefault();
    const via = (e.submitter as HTMLButtonElement | null)?.value === "email" ? "email" : "passkey";
    void run(via);
  };

  if (sent) {
    return (
      <section class="screen narrow" data-testid="screen-signup">
        <h1>Check your email</h1>
        <Banner tone="ok" testId="check-email">
          We sent a link to {form.email}. Open it on this device to finish creating your account
          {sent === "passkey" ? "; your passkey works from then on." : "."}
        </Banner>
      </section>
    );
  }
  const set = (key: keyof typeof form) => (e: { currentTarget: HTMLInputElement }) =>
    setForm({ ...form, [key]: e.currentTarget.value });
  return (
    <section class="screen narrow" data-testid="screen-signup">
      <h1>Create your Tapgate account</h1>
      <form class="stack" onSubmit={onSubmit}>
        <Field label="Email">
          <input
            type="email"
            required
            autocomplete="email"
            value={form.email}
            onInput={set("email")}
            data-testid="signup-email"
          />
        </Field>
        <Field label="Your name">
          <input
            required
            maxLength={100}
            autocomplete="name"
            value={form.name}
            onInput={set("name")}
            data-testid="signup-name"
          />
        </Field>
        <Field label="Team name">
          <input
            required
            maxLength={100}
            autocomplete="organization"
            value={form.team}
            onInput={set("team")}
            data-testid="signup-team"
          />
        </Field>
        <button
          type="submit"
          value="passkey"
          class="button primary wide"
          disabled={busy !== null}
          data-testid="signup-passkey"
        >
          {busy === "passkey" ? "Waiting for your passkey…" : "Create account with a passkey"}
        </button>
        <button
          type="submit"
          value="email"
          class="button secondary wide"
          disabled={busy !== null}
          data-testid="signup-email-only"
        >
          Sign up with email only
        </button>
        {error && (
          <Banner tone="error" testId="signup-error">
            {error}
          </Banner>
        )}
      </form>
      <p class="muted">
        Already have an account? <Link href="/signin">Sign in</Link>
      </p>
    </section>
  );
}
