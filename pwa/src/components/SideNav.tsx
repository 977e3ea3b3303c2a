import { isAdmin } from "../api";
import { Link } from "../router";
import { useMe } from "../viewer";

interface Item {
  href: string;
  label: string;
  testId: string;
  icon: string;
  admin?: boolean;
}

const WORK: Item[] = [
  { href: "/", label: "Pending", testId: "nav-pending", icon: "M12 4a8 8 0 1 0 0 16 8 8 0 0 0 0-16Z M12 8v4l3 2" },
  { href: "/sessions", label: "Sessions", testId: "nav-sessions", icon: "M3 5h18v12H3Z M8 21h8 M12 17v4" },
  { href: "/history", label: "History", testId: "nav-history", icon: "M5 6h14 M5 12h14 M5 18h9" },
  { href: "/rules", label: "Rules", testId: "nav-rules", icon: "M4 6h16 M4 12h10 M4 18h6 M17 14l2 2 3-4" },
  { href: "/stats", label: "Stats", testId: "nav-stats", icon: "M5 20V10 M12 20V4 M19 20v-7" },
];

const TEAM: Item[] = [
  {
    href: "/members",
    label: "Members",
    testId: "nav-members",
    icon: "M9 11a4 4 0 1 0 0-8 4 4 0 0 0 0 8Z M2 21a7 7 0 0 1 14 0 M17 4a4 4 0 0 1 0 7 M22 21a7 7 0 0 0-4-6.3",
  },
  {
    href: "/keys",
    label: "API keys",
    testId: "nav-keys",
    icon: "M14 10a5 5 0 1 0-3.5 4.8L13 17h2v2h2v2h4v-4l-6.2-6.2c.1-.3.2-.5.2-.8Z",
  },
  {
    href: "/channels",
    label: "Channels",
    testId: "nav-channels",
    icon: "M4 5h16v10H9l-5 4Z M8 9h8 M8 12h5",
  },
  {
    href: "/policy",
    label: "Policy",
    testId: "nav-policy",
    icon: "M12 3l8 3v6c0 5-3.5 8-8 9-4.5-1-8-4-8-9V6Z",
    admin: true,
  },
  {
    href: "/audit",
    label: "Audit log",
    testId: "nav-audit",
    icon: "M6 3h9l4 4v14H6Z M9 12h7 M9 16h7 M9 8h3",
    admin: true,
  },
];

const DEVICE: Item[] = [{ href: "/devices", label: "Devices", testId: "nav-devices", icon: "M8 3h8v18H8Z M11 18h2" }];

/** The wide layout's navigation; admin screens are hidden from approvers and viewers (the server still checks). */
export function SideNav({ path, pendingCount }: { path: string; pendingCount: number }) {
  const me = useMe();
  const admin = isAdmin(me?.role);
  const current = (href: string) => (href === "/" ? path === "/" : path === href || path.startsWith(`${href}/`));
  const render = (items: Item[]) =>
    items
      .filter((i) => !i.admin || admin)
      .map((i) => (
        <Link key={i.href} href={i.href} aria-current={current(i.href) ? "page" : undefined} data-testid={i.testId}>
          <svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true">
            <path
              d={i.icon}
              fill="none"
              stroke="currentColor"
              stroke-width="2"
              stroke-linecap="round"
              stroke-linejoin="round"
            />
          </svg>
          <span class="side-label">{i.label}</span>
          {i.href === "/" && pendingCount > 0 && (
            <span class="side-count" data-testid="pending-count">
              {pendingCount}
            </span>
          )}
        </Link>
      ));
  return (
    <nav class="side-nav" aria-label="Main" data-testid="side-nav">
      {render(WORK)}
      <p class="side-heading">Team</p>
      {render(TEAM)}
      <p class="side-heading">This browser</p>
      {render(DEVICE)}
    </nav>
  );
}
