/**
 * `/invite?token=…`: who invites me to which team and role, and Accept. Signed out, the invitee
 * signs in or up first and comes back here (the token waits in the URL and in local storage).
 */
import { useEffect, useState } from "preact/hooks";
import { type ApiError, api, type InvitePreview } from "../api";
import { Banner } from "../components/Banner";
import { dateTime } from "../format";
import { Link, navigate } from "../router";
import { useViewer } from "../viewer";
import { rememberNext } from "./SignIn";

export function InviteScreen({ token }: { token: string }) {
  const { viewer, refresh } = useViewer();
  const [preview, setPreview] = useState<InvitePreview | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const [acceptError, setAcceptError] = useState<string | null>(null);
  const back = `/invite?token=${encodeURIComponent(token)}`;

  useEffect(() => {
    if (!token) return;
    api.previewInvite(token).then(setPreview, (e: ApiError) => setError(e));
  }, [token]);

  const accept = async () => {
    setBusy(true);
    setAcceptError(null);
    try {
      await api.acceptInvite(token);
      await refresh();
      navigate("/", { replace: true });
    } catch (e) {
      const err = e as ApiError;
      setAcceptError(err.code === "already_member" ? "You are already a member of this team." : err.message);
      setBusy(false);
    }
  };

  return (
    <section class="screen narrow" data-testid="screen-invite">
      <h1>Join a team on Tapgate</h1>
      {!token || error?.status === 404 ? (
        <Banner tone="error" testId="invite-invalid">
          This invite link is not valid: it was already used, revoked, or it expired. Ask for a new one.
        </Banner>
      ) : error ? (
        <Banner tone={error.offline ? "warn" : "error"} testId="invite-error">
          {error.message}
        </Banner>
      ) : !preview ? (
        <p class="muted">Loading…</p>
      ) : (
        <div class="stack">
          <div class="panel invite-card" data-testid="invite-preview">
            <p class="invite-team" data-testid="invite-team">
              {preview.team.name}
            </p>
            <p>
              <strong>{preview.invitedBy.name}</strong> invites you to join as{" "}
              <strong data-testid="invite-role">{preview.role}</strong>.
            </p>
            <p class="muted small">The link works once, until {dateTime(preview.expiresAt)}.</p>
          </div>
          {viewer.status === "signed-in" ? (
            <>
              <p class="muted small">
                You are signed in as {viewer.me.user.email}. Accepting adds this team to your account and switches to
                it.
              </p>
              <button
                type="button"
                class="button primary wide"
                onClick={accept}
                disabled={busy}
                data-testid="invite-accept"
              >
                {busy ? "Joining…" : `Join ${preview.team.name}`}
              </button>
              {acceptError && (
                <Banner tone="error" testId="invite-accept-error">
                  {acceptError} <Link href="/">Go to Tapgate</Link>
                </Banner>
              )}
            </>
          ) : viewer.status === "loading" ? null : (
            <>
              <p>Sign in or create an account first; you come back here to accept.</p>
              <Link
                href={`/signin?next=${encodeURIComponent(back)}`}
                class="button primary wide"
                onClick={() => rememberNext(back)}
                data-testid="invite-signin"
              >
                Sign in to accept
              </Link>
              <Link
                href={`/signup?next=${encodeURIComponent(back)}`}
                class="button secondary wide"
                onClick={() => rememberNext(back)}
                data-testid="invite-signup"
              >
                Create an account
              </Link>
            </>
          )}
        </div>
      )}
    </section>
  );
}
