/**
 * Stopping an agent session from the card, the board and the Sessions screen: **Stop session**
 * denies every request the session has pending and refuses new ones until someone resumes it
 * (`POST /v1/sessions/:id/stop`). Two taps (Stop, then the confirm that says what it does), so a
 * stray tap denies nothing; anyone who may decide may stop. A stopped session shows who stopped
 * it and why, with **Resume** for its owner and admins.
 *
 * Owns: those two controls. Does not own: the calls (`api.ts`) or where the session's state comes
 * from (the screens, from `GET /v1/sessions` and the live feed's `session` events).
 */
import { useState } from "preact/hooks";
import { type AgentSession, api, canDecide, isAdmin } from "../api";
import { useNow } from "../clock";
import { ago } from "../format";
import { useAction } from "../use-action";
import { useMe } from "../viewer";
import { SafeText } from "./SafeText";

type Stop = NonNullable<AgentSession["stopped"]>;

/** `reason`: the words to the agent (the card passes its reason field's). `onStopped`: the stop as answered. */
export function StopSessionButton({
  sessionId,
  reason,
  compact = false,
  onStopped,
}: {
  sessionId: string;
  reason?: string;
  compact?: boolean;
  onStopped?: (stop: Stop) => void;
}) {
  const me = useMe();
  const action = useAction();
  const [confirming, setConfirming] = useState(false);
  const [denied, setDenied] = useState<number | null>(null);
  if (!canDecide(me?.role)) return null;
  const size = compact ? " compact" : "";
  if (denied !== null) {
    return (
      <span class="stop-session muted small" role="status" data-testid="stop-session-done">
        Session stopped{denied > 0 ? `: ${denied} request${denied === 1 ? "" : "s"} denied` : ""}.
      </span>
    );
  }
  const stop = () =>
    action.run(async () => {
      const answer = await api.stopSession(sessionId, reason?.trim() || undefined);
      setDenied(answer.denied);
      if (answer.stopped) onStopped?.(answer.stopped);
    });
  return (
    <span class="stop-session">
      {confirming ? (
        <>
          <button
            type="button"
            class={`button danger${size}`}
            disabled={action.busy}
            onClick={() => void stop()}
            data-testid="stop-session-confirm"
          >
            {action.busy ? "Stopping…" : "Stop: deny all its requests"}
          </button>{" "}
          <button
            type="button"
            class={`button secondary${size}`}
            disabled={action.busy}
            onClick={() => setConfirming(false)}
            data-testid="stop-session-cancel"
          >
            Keep running
          </button>
        </>
      ) : (
        <button
          type="button"
          class={`button secondary${size}`}
          title="Deny every pending request of this session and refuse new ones until it is resumed"
          onClick={() => setConfirming(true)}
          data-testid="stop-session"
        >
          Stop session
        </button>
      )}
      {action.error && (
        <span class="row-error" role="alert" data-testid="stop-session-error">
          {" "}
          <SafeText text={action.error} />
        </span>
      )}
    </span>
  );
}

/** "Stopped by Ada 2 min ago: <reason>", with Resume for the session's owner and admins. */
export function StoppedNote({
  session,
  onResumed,
}: {
  session: Pick<AgentSession, "sessionId" | "owner" | "stopped">;
  onResumed?: () => void;
}) {
  const me = useMe();
  const now = useNow();
  const action = useAction();
  const stop = session.stopped;
  if (!stop) return null;
  const mayResume = me !== null && (isAdmin(me.role) || me.user.id === session.owner.userId);
  const resume = () =>
    action.run(async () => {
      await api.resumeSession(session.sessionId);
      onResumed?.();
    });
  return (
    <span class="stopped-note" data-testid="session-stopped">
      <span class="tag danger">Stopped</span> by <SafeText text={stop.by.name} /> {ago(stop.at, now)}
      {stop.reason && (
        <>
          : <SafeText text={stop.reason} />
        </>
      )}{" "}
      {mayResume && (
        <button
          type="button"
          class="button secondary compact"
          disabled={action.busy}
          onClick={() => void resume()}
          data-testid="resume-session"
        >
          {action.busy ? "Resuming…" : "Resume"}
        </button>
      )}
      {action.error && (
        <span class="row-error" role="alert" data-testid="resume-session-error">
          {" "}
          <SafeText text={action.error} />
        </span>
      )}
    </span>
  );
}
