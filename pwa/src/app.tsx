/** The shell: who is signed in, which screen the URL names, and the chrome around it. */
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import { ApiError, api, setUnauthenticatedHandler } from "./api";
import { BottomNav } from "./components/BottomNav";
import { live } from "./live";
import { pending, usePending } from "./pending";
import { Link, type Location, navigate, signInFor, useLocation } from "./router";
import { ApprovalCard } from "./screens/ApprovalCard";
import { DeviceApproval } from "./screens/Device";
import { Devices } from "./screens/Devices";
import { History } from "./screens/History";
import { PairClaim, PairDesktop, PairSetup } from "./screens/Pair";
import { Pending } from "./screens/Pending";
import { SignIn } from "./screens/SignIn";
import { SignUp } from "./screens/SignUp";
import { type Session, SessionContext } from "./session";

export function App() {
  const [session, setSession] = useState<Session>({ status: "loading" });
  const loc = useLocation();

  const refresh = useCallback(async () => {
    try {
      const me = await api.me();
      setSession(me ? { status: "signed-in", me } : { status: "signed-out" });
    } catch (e) {
      setSession(e instanceof ApiError && e.offline ? { status: "offline" } : { status: "signed-out" });
    }
  }, []);

  useEffect(() => {
    void refresh();
    setUnauthenticatedHandler(() => setSession({ status: "signed-out" }));
    // Opened offline: find out who we are as soon as the network is back.
    const retry = () => void refresh();
    addEventListener("online", retry);
    return () => removeEventListener("online", retry);
  }, [refresh]);

  const userId = session.status === "signed-in" ? session.me.user.id : null;
  useEffect(() => {
    if (!userId) return;
    live.start();
    pending.start(userId);
    return () => {
      live.stop();
      pending.stop();
    };
  }, [userId]);

  const route = matchRoute(loc);
  const needsSignIn = route.protected && session.status === "signed-out";
  useEffect(() => {
    if (needsSignIn) navigate(signInFor(loc.path + location.search), { replace: true });
  }, [needsSignIn, loc.path]);

  const ctx = useMemo(() => ({ session, refresh }), [session, refresh]);
  const chrome = session.status === "signed-in" || session.status === "offline";
  return (
    <SessionContext.Provider value={ctx}>
      <Header session={session} />
      <main class={chrome ? "with-nav" : undefined}>
        {session.status === "loading" || needsSignIn ? <p class="muted center">Loading…</p> : route.render()}
      </main>
      {chrome && <Nav path={loc.path} />}
    </SessionContext.Provider>
  );
}

function Nav({ path }: { path: string }) {
  const { mine, team } = usePending();
  return <BottomNav path={path} pendingCount={mine.length + team.length} />;
}

interface Route {
  protected: boolean;
  render: () => ComponentChildren;
}

function matchRoute({ path, query }: Location): Route {
  const approval = /^\/approvals\/([^/]+)$/.exec(path);
  if (approval?.[1]) {
    const id = decodeURIComponent(approval[1]);
    return { protected: true, render: () => <ApprovalCard key={id} id={id} /> };
  }
  switch (path) {
    case "/":
      return { protected: true, render: () => <Pending /> };
    case "/history":
      return { protected: true, render: () => <History /> };
    case "/devices":
      return { protected: true, render: () => <Devices /> };
    case "/device":
      return { protected: true, render: () => <DeviceApproval code={query.get("code") ?? ""} /> };
    case "/pair": {
      const token = query.get("token");
      if (token) return { protected: false, render: () => <PairClaim token={token} /> };
      if (query.get("step") === "setup") return { protected: true, render: () => <PairSetup /> };
      return { protected: true, render: () => <PairDesktop /> };
    }
    case "/signin":
      return { protected: false, render: () => <SignIn token={query.get("token")} next={query.get("next")} /> };
    case "/signup":
      return { protected: false, render: () => <SignUp /> };
    default:
      return { protected: false, render: () => <NotFound /> };
  }
}

function Header({ session }: { session: Session }) {
  const signOut = async () => {
    await api.signOut().catch(() => {});
    // A full load drops every cached list and closes the live socket.
    location.assign("/signin");
  };
  return (
    <header class="top">
      <Link href="/" class="brand" data-testid="brand">
        <img src="/icons/icon-192.png" alt="" width="28" height="28" />
        Tapgate
      </Link>
      {session.status === "signed-in" && (
        <div class="top-actions">
          <span class="muted team-name" data-testid="team-name">
            {session.me.team.name}
          </span>
          <Link href="/pair" class="top-link" data-testid="add-phone">
            Add a phone
          </Link>
          <button type="button" class="top-link" onClick={signOut} data-testid="sign-out">
            Sign out
          </button>
        </div>
      )}
    </header>
  );
}

function NotFound() {
  return (
    <section class="screen">
      <h1>Not found</h1>
      <p>
        There is nothing at this address. <Link href="/">Go to pending requests</Link>.
      </p>
    </section>
  );
}
