/** The shell: who is signed in, which screen the URL names, and the chrome around it. */
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import { ApiError, api, setUnauthenticatedHandler } from "./api";
import { BottomNav } from "./components/BottomNav";
import { SideNav } from "./components/SideNav";
import { TeamSwitcher } from "./components/TeamSwitcher";
import { lazy } from "./lazy";
import { live } from "./live";
import { pending, usePending } from "./pending";
import { Link, type Location, navigate, signInFor, useLocation, useWide } from "./router";
import { ApprovalCard } from "./screens/ApprovalCard";
import { DeviceApproval } from "./screens/Device";
import { Devices } from "./screens/Devices";
import { History } from "./screens/History";
import { InviteScreen } from "./screens/Invite";
import { PairClaim, PairDesktop, PairSetup } from "./screens/Pair";
import { Pending } from "./screens/Pending";
import { SignIn } from "./screens/SignIn";
import { SignUp } from "./screens/SignUp";
import { type Viewer, ViewerContext } from "./viewer";

const Board = lazy(() => import("./dashboard/Board").then((m) => m.Board));
const Sessions = lazy(() => import("./dashboard/Sessions").then((m) => m.Sessions));
const SessionPage = lazy(() => import("./dashboard/Sessions").then((m) => m.SessionPage));
const TeamHistory = lazy(() => import("./dashboard/TeamHistory").then((m) => m.TeamHistory));
const Audit = lazy(() => import("./dashboard/Audit").then((m) => m.Audit));
const Members = lazy(() => import("./dashboard/Members").then((m) => m.Members));
const Keys = lazy(() => import("./dashboard/Keys").then((m) => m.Keys));
const Channels = lazy(() => import("./dashboard/Channels").then((m) => m.Channels));
const Rules = lazy(() => import("./dashboard/Rules").then((m) => m.Rules));
const Policy = lazy(() => import("./dashboard/Policy").then((m) => m.Policy));
const Stats = lazy(() => import("./dashboard/Stats").then((m) => m.Stats));

export function App() {
  const [viewer, setViewer] = useState<Viewer>({ status: "loading" });
  const loc = useLocation();

  const refresh = useCallback(async () => {
    try {
      const me = await api.me();
      setViewer(me ? { status: "signed-in", me } : { status: "signed-out" });
    } catch (e) {
      setViewer(e instanceof ApiError && e.offline ? { status: "offline" } : { status: "signed-out" });
    }
  }, []);

  useEffect(() => {
    void refresh();
    setUnauthenticatedHandler(() => setViewer({ status: "signed-out" }));
    // Opened offline: find out who we are as soon as the network is back.
    const retry = () => void refresh();
    addEventListener("online", retry);
    return () => removeEventListener("online", retry);
  }, [refresh]);

  // A phone can think it is online while the server is unreachable, and then no "online" event
  // comes: while offline, also try again with backoff and whenever the app comes to the front.
  const offline = viewer.status === "offline";
  useEffect(() => {
    if (!offline) return;
    let delay = 2_000;
    let timer = setTimeout(function again() {
      void refresh();
      delay = Math.min(delay * 2, 60_000);
      timer = setTimeout(again, delay);
    }, delay);
    const onVisible = () => document.visibilityState === "visible" && void refresh();
    document.addEventListener("visibilitychange", onVisible);
    return () => {
      clearTimeout(timer);
      document.removeEventListener("visibilitychange", onVisible);
    };
  }, [offline, refresh]);

  const userId = viewer.status === "signed-in" ? viewer.me.user.id : null;
  // Keyed by team too: after a team switch the feed and the lists belong to the new team.
  const teamId = viewer.status === "signed-in" ? viewer.me.team.id : null;
  useEffect(() => {
    if (!userId) return;
    live.start();
    pending.start(userId);
    return () => {
      live.stop();
      pending.stop();
    };
  }, [userId, teamId]);

  const wide = useWide();
  const route = matchRoute(loc, wide);
  const needsSignIn = route.protected && viewer.status === "signed-out";
  useEffect(() => {
    if (needsSignIn) navigate(signInFor(loc.path + location.search), { replace: true });
  }, [needsSignIn, loc.path]);

  const ctx = useMemo(() => ({ viewer, refresh }), [viewer, refresh]);
  const chrome = viewer.status === "signed-in" || viewer.status === "offline";
  const sidebar = chrome && wide;
  return (
    <ViewerContext.Provider value={ctx}>
      <div class={sidebar ? "shell has-sidebar" : "shell"}>
        <Header viewer={viewer} wide={wide} />
        {sidebar && <Nav path={loc.path} side />}
        <main class={sidebar ? "wide" : chrome ? "with-nav" : undefined} key={teamId ?? "none"}>
          {viewer.status === "loading" || needsSignIn ? <p class="muted center">Loading…</p> : route.render()}
        </main>
        {chrome && !wide && <Nav path={loc.path} />}
      </div>
    </ViewerContext.Provider>
  );
}

function Nav({ path, side = false }: { path: string; side?: boolean }) {
  const { mine, team } = usePending();
  const count = mine.length + team.length;
  return side ? <SideNav path={path} pendingCount={count} /> : <BottomNav path={path} pendingCount={count} />;
}

interface Route {
  protected: boolean;
  render: () => ComponentChildren;
}

function matchRoute({ path, query }: Location, wide: boolean): Route {
  const approval = /^\/approvals\/([^/]+)$/.exec(path);
  if (approval?.[1]) {
    const id = decodeURIComponent(approval[1]);
    return { protected: true, render: () => <ApprovalCard key={id} id={id} /> };
  }
  const agentSession = /^\/sessions\/([^/]+)$/.exec(path);
  if (agentSession?.[1]) {
    const id = decodeURIComponent(agentSession[1]);
    return { protected: true, render: () => <SessionPage key={id} id={id} /> };
  }
  switch (path) {
    case "/":
      return { protected: true, render: () => (wide ? <Board open={query.get("open")} /> : <Pending />) };
    case "/history":
      return { protected: true, render: () => (wide ? <TeamHistory /> : <History />) };
    case "/sessions":
      return { protected: true, render: () => <Sessions /> };
    case "/audit":
      return { protected: true, render: () => <Audit /> };
    case "/members":
      return { protected: true, render: () => <Members /> };
    case "/channels":
      return { protected: true, render: () => <Channels /> };
    case "/keys":
      return { protected: true, render: () => <Keys /> };
    case "/rules":
      return { protected: true, render: () => <Rules /> };
    case "/policy":
      return { protected: true, render: () => <Policy /> };
    case "/stats":
      return { protected: true, render: () => <Stats /> };
    case "/invite":
      return { protected: false, render: () => <InviteScreen token={query.get("token") ?? ""} /> };
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

function Header({ viewer, wide }: { viewer: Viewer; wide: boolean }) {
  const signOut = async () => {
    await api.signOut().catch(() => {});
    // A full load drops every cached list and closes the live socket.
    location.assign("/signin");
  };
  return (
    <header class={wide ? "top wide" : "top"}>
      <Link href="/" class="brand" data-testid="brand">
        <img src="/icons/icon-192.png" alt="" width="28" height="28" />
        Tapgate
      </Link>
      {viewer.status === "signed-in" && (
        <div class="top-actions">
          <TeamSwitcher me={viewer.me} />
          {wide && (
            <span class="muted top-user" data-testid="user-name">
              {viewer.me.user.name} · <span class="role-tag">{viewer.me.role}</span>
            </span>
          )}
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
