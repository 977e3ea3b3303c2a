import { Link } from "../router";

const TABS = [
  { href: "/", label: "Pending", testId: "nav-pending", icon: "M12 4a8 8 0 1 0 0 16 8 8 0 0 0 0-16Z M12 8v4l3 2" },
  { href: "/history", label: "History", testId: "nav-history", icon: "M5 6h14 M5 12h14 M5 18h9" },
  { href: "/devices", label: "Devices", testId: "nav-devices", icon: "M8 3h8v18H8Z M11 18h2" },
];

export function BottomNav({ path, pendingCount }: { path: string; pendingCount: number }) {
  const current = (href: string) =>
    href === "/" ? path === "/" || path.startsWith("/approvals/") : path.startsWith(href);
  return (
    <nav class="bottom-nav" aria-label="Main">
      {TABS.map((t) => (
        <Link key={t.href} href={t.href} aria-current={current(t.href) ? "page" : undefined} data-testid={t.testId}>
          <svg viewBox="0 0 24 24" width="24" height="24" aria-hidden="true">
            <path d={t.icon} fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" />
          </svg>
          <span>{t.label}</span>
          {t.href === "/" && pendingCount > 0 && (
            <span class="badge" data-testid="pending-count">
              {pendingCount}
            </span>
          )}
        </Link>
      ))}
    </nav>
  );
}
