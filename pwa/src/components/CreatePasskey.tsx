import { startRegistration, WebAuthnError } from "@simplewebauthn/browser";
import { useState } from "preact/hooks";
import { api } from "../api";
import { guessDeviceName } from "../device";
import { withReauth } from "../reauth";
import { Banner } from "./Banner";

/** Adds a passkey for this device to the signed-in account. */
export function CreatePasskey() {
  const [state, setState] = useState<"idle" | "busy" | "done">("idle");
  const [error, setError] = useState<string | null>(null);
  const create = async () => {
    setState("busy");
    setError(null);
    try {
      const { challengeId, options } = await withReauth(() => api.passkeyRegisterOptions());
      const response = await startRegistration({ optionsJSON: options });
      await api.passkeyRegisterVerify(challengeId, response, await guessDeviceName());
      setState("done");
    } catch (e) {
      setError(passkeyError(e));
      setState("idle");
    }
  };
  if (state === "done") {
    return (
      <Banner tone="ok" testId="passkey-created">
        Passkey created. Next time, sign in on this device with it.
      </Banner>
    );
  }
  return (
    <div class="stack">
      <button
        type="button"
        class="button primary wide"
        onClick={create}
        disabled={state === "busy"}
        data-testid="create-passkey"
      >
        {state === "busy" ? "Waiting for your passkey…" : "Create a passkey"}
      </button>
      {error && (
        <Banner tone="error" testId="passkey-error">
          {error}
        </Banner>
      )}
    </div>
  );
}

/** Passkey failures in words: a dismissed prompt is not an error worth alarming anyone about. */
export function passkeyError(e: unknown): string {
  if (e instanceof WebAuthnError && e.code === "ERROR_CEREMONY_ABORTED") return "Cancelled.";
  if (e instanceof Error && e.name === "NotAllowedError") return "The passkey prompt was dismissed or timed out.";
  return e instanceof Error ? e.message : "Something went wrong with the passkey.";
}
