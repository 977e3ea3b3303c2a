import { useEffect, useState } from "preact/hooks";
import { type ApiError, api, type DeviceCode } from "../api";
import { useNow } from "../clock";
import { Banner } from "../components/Banner";
import { Countdown } from "../components/Countdown";
import { Field } from "../components/Field";
import { SafeText } from "../components/SafeText";
import { ago } from "../format";
import { navigate } from "../router";
import { useMe } from "../viewer";

const DONE = {
  approve: "Approved. Your terminal finishes signing in within a few seconds.",
  deny: "Denied. The terminal gets no key.",
};

const DECISIONS = [
  ["approve", "allow", "Approve"],
  ["deny", "reject", "Deny"],
] as const;

/** `tapgate login`: approve or deny the code a terminal shows (the device authorization grant). */
export function DeviceApproval({ code }: { code: string }) {
  const me = useMe();
  const [info, setInfo] = useState<DeviceCode | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [result, setResult] = useState<{ tone: "ok" | "error"; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const [typed, setTyped] = useState(code);

  useEffect(() => {
    setInfo(null);
    setError(null);
    setResult(null);
    if (code) api.deviceCode(code).then(setInfo, (e: ApiError) => setError(e));
  }, [code]);

  const decide = async (decision: "approve" | "deny") => {
    setBusy(true);
    try {
      setInfo(await api.decideDeviceCode(code, decision));
      setResult({ tone: decision === "approve" ? "ok" : "error", text: DONE[decision] });
    } catch (e) {
      const err = e as ApiError;
      const status = err.body.status;
      // Someone else decided first: show their decision, not ours.
      if (err.status === 409 && (status === "approved" || status === "denied" || status === "consumed")) {
        setInfo((i) => i && { ...i, status });
      }
      setResult({ tone: "error", text: err.message });
    } finally {
      setBusy(false);
    }
  };

  if (!code) {
    return (
      <section class="screen narrow" data-testid="screen-device">
        <h1>Sign in a terminal</h1>
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            navigate(`/device?code=${encodeURIComponent(typed.trim())}`);
          }}
        >
          <Field label="The code your terminal shows">
            <input
              value={typed}
              onInput={(e) => setTyped(e.currentTarget.value)}
              autocomplete="off"
              autocapitalize="characters"
              required
              data-testid="device-code-input"
            />
          </Field>
          <button type="submit" class="button primary wide">
            Continue
          </button>
        </form>
      </section>
    );
  }

  return (
    <section class="screen narrow" data-testid="screen-device">
      <h1>Approve this terminal?</h1>
      {error && !info && (
        <Banner tone="error" testId="device-error">
          {error.message}
        </Banner>
      )}
      {!info && !error && <p class="muted">Loading…</p>}
      {info && (
        <>
          <p>
            A terminal that calls itself{" "}
            <strong>
              <SafeText text={info.clientName} testId="device-client-name" />
            </strong>{" "}
            <span class="muted">(its own words, not checked)</span> asks to sign in with the code
          </p>
          <p class="user-code" data-testid="device-user-code">
            {info.userCode}
          </p>
          <RequestedFrom info={info} />
          {info.status === "pending" && !result ? (
            <>
              <p>
                Check that your terminal shows the same code. If you approve, it gets an agent key for{" "}
                <strong>{me?.team.name}</strong>, as <strong>{me?.user.email}</strong>. Agent keys can ask for approval;
                they cannot decide.
              </p>
              <Countdown expiresAt={info.expiresAt} testId="device-countdown" />
              <div class="options">
                {DECISIONS.map(([decision, tone, label]) => (
                  <button
                    key={decision}
                    type="button"
                    class={`option ${tone}`}
                    disabled={busy}
                    onClick={() => decide(decision)}
                    data-testid={`device-${decision}`}
                  >
                    {label}
                  </button>
                ))}
              </div>
            </>
          ) : (
            <Banner tone={result?.tone ?? (info.status === "denied" ? "error" : "ok")} testId="device-result">
              {result?.text ?? `This code was already ${info.status === "denied" ? "denied" : "approved"}.`}
            </Banner>
          )}
        </>
      )}
    </section>
  );
}

/** "Requested 2 min ago from 203.0.113.0/24 (Netherlands)": is this the terminal in front of me? */
function RequestedFrom({ info }: { info: DeviceCode }) {
  const now = useNow();
  const { network, country } = info.requestedFrom;
  const place = network
    ? ` from ${network}${country ? ` (${countryName(country)})` : ""}`
    : country
      ? ` from ${countryName(country)}`
      : "";
  return (
    <p class="muted" data-testid="device-requested">
      Requested {ago(info.createdAt, now)}
      {place || " from an unknown address"}. If that is not your terminal, deny.
    </p>
  );
}

function countryName(code: string): string {
  try {
    const name = new Intl.DisplayNames(undefined, { type: "region" }).of(code);
    return name && name !== code ? `${name}, ${code}` : code;
  } catch {
    return code; // T1 (Tor) and other codes that are not regions
  }
}
