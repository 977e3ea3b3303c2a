import { useEffect, useState } from "preact/hooks";
import { type ApiError, api, type WebSessionInfo } from "../api";
import { useNow } from "../clock";
import { ago } from "../format";
import { withReauth } from "../reauth";
import { Banner, LoadBanner } from "./Banner";
import { SafeText } from "./SafeText";

/**
 * The browsers signed in as me (in any team): when each signed in and was last seen, a "Sign
 * out" per row and "Sign out everywhere else". Ending one closes its live feed at once.
 */
export function WebSessions({ onSignedOutHere }: { onSignedOutHere: () => void }) {
  const now = useNow();
  const [sessions, setSessions] = useState<WebSessionInfo[] | null>(null);
  const [loadError, setLoadError] = useState<ApiError | null>(null);
  const [status, setStatus] = useState<{ tone: "ok" | "error"; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const load = () =>
    api.webSessions().then(
      (r) => {
        setSessions(r.sessions);
        setLoadError(null);
      },
      (e: ApiError) => setLoadError(e),
    );
  useEffect(() => void load(), []);

  const run = async (work: () => Promise<string | null>) => {
    setBusy(true);
    setStatus(null);
    try {
      const text = await work();
      if (text) setStatus({ tone: "ok", text });
      await load();
    } catch (e) {
      setStatus({ tone: "error", text: (e as Error).message });
    } finally {
      setBusy(false);
    }
  };
  const end = (s: WebSessionInfo) =>
    run(async () => {
      await api.endWebSession(s.id);
      if (s.current) onSignedOutHere();
      return null;
    });
  const endOthers = () =>
    run(async () => {
      const { ended } = await withReauth(() => api.endOtherWebSessions());
      return ended === 1 ? "Signed out 1 other browser." : `Signed out ${ended} other browsers.`;
    });
  const others = sessions?.filter((s) => !s.current).length ?? 0;

  return (
    <section class="stack" data-testid="web-sessions">
      <h2 class="group-title">Signed-in devices</h2>
      {loadError && <LoadBanner error={loadError} testId="web-sessions-error" what="your signed-in devices" />}
      <ul class="rows">
        {sessions?.map((s) => (
          <li class="row" key={s.id} data-testid={`web-session-${s.id}`}>
            <div class="row-main">
              <span class="row-title">
                <SafeText text={s.device ?? "Unknown browser"} />
                {s.current && (
                  <span class="tag" data-testid="this-browser">
                    this browser
                  </span>
                )}
              </span>
              <span class="row-sub muted">
                signed in {ago(s.createdAt, now)} · last seen {ago(s.lastSeenAt, now)}
              </span>
            </div>
            <div class="row-actions">
              <button
                type="button"
                class="button danger"
                disabled={busy}
                onClick={() => end(s)}
                data-testid="web-session-end"
              >
                Sign out
              </button>
            </div>
          </li>
        ))}
      </ul>
      {others > 0 && (
        <button
          type="button"
          class="button secondary"
          disabled={busy}
          onClick={endOthers}
          data-testid="web-sessions-end-others"
        >
          Sign out everywhere else
        </button>
      )}
      {status && (
        <Banner tone={status.tone} testId="web-sessions-status">
          {status.text}
        </Banner>
      )}
    </section>
  );
}
