/** A tiny history-API router: the URL is the state; links and code call `navigate`. */
import type { AnchorHTMLAttributes, TargetedMouseEvent } from "preact";
import { useEffect, useState } from "preact/hooks";

const CHANGE = "tapgate:navigate";

export function navigate(to: string, opts: { replace?: boolean; keepScroll?: boolean } = {}): void {
  if (to === location.pathname + location.search) return;
  if (opts.replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  dispatchEvent(new Event(CHANGE));
  if (!opts.keepScroll) scrollTo(0, 0);
}

/** True on a wide screen (≥ 1024 px): the dashboard layout with the sidebar. */
export function useWide(): boolean {
  const query = "(min-width: 1024px)";
  const [wide, setWide] = useState(() => matchMedia(query).matches);
  useEffect(() => {
    const mq = matchMedia(query);
    const update = () => setWide(mq.matches);
    update();
    mq.addEventListener("change", update);
    return () => mq.removeEventListener("change", update);
  }, []);
  return wide;
}

export interface Location {
  path: string;
  query: URLSearchParams;
}

export function useLocation(): Location {
  const [, setTick] = useState(0);
  useEffect(() => {
    const update = () => setTick((t) => t + 1);
    addEventListener("popstate", update);
    addEventListener(CHANGE, update);
    return () => {
      removeEventListener("popstate", update);
      removeEventListener(CHANGE, update);
    };
  }, []);
  return { path: location.pathname, query: new URLSearchParams(location.search) };
}

/** Only same-app paths: `next=//evil.example` or `next=https://…` must not become an open redirect. */
export function safeNext(next: string | null | undefined): string {
  return next?.startsWith("/") && !next.startsWith("//") && !next.startsWith("/\\") ? next : "/";
}

/** The sign-in screen for `path`, returning there afterwards. */
export function signInFor(path: string): string {
  return path === "/" ? "/signin" : `/signin?next=${encodeURIComponent(path)}`;
}

/** An <a> that routes in place (after the caller's own onClick); modified clicks still open new tabs. */
export function Link(props: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string }) {
  const onClick = (e: TargetedMouseEvent<HTMLAnchorElement>) => {
    (props.onClick as ((e: TargetedMouseEvent<HTMLAnchorElement>) => void) | undefined)?.(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(props.href);
  };
  return <a {...props} href={props.href} onClick={onClick} />;
}
