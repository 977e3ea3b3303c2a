/** ACP tool kinds, each with a simple stroked glyph, so a glance tells an edit from a shell command. */
const PATHS: Record<string, string> = {
  read: "M2 12s3.5-7 10-7 10 7 10 7-3.5 7-10 7S2 12 2 12Z M12 9a3 3 0 1 0 0 6 3 3 0 0 0 0-6Z",
  edit: "M4 20h4L19 9l-4-4L4 16v4Z M13.5 6.5l4 4",
  delete: "M4 7h16 M9 7V4h6v3 M6 7l1 13h10l1-13",
  move: "M4 12h16 M16 8l4 4-4 4 M8 8l-4 4 4 4",
  search: "M11 4a7 7 0 1 0 0 14 7 7 0 0 0 0-14Z M16 16l5 5",
  execute: "M3 5h18v14H3Z M7 10l3 2-3 2 M12 15h5",
  think: "M9 18h6 M10 21h4 M12 3a6 6 0 0 0-3.5 10.9V16h7v-2.1A6 6 0 0 0 12 3Z",
  fetch: "M12 3a9 9 0 1 0 0 18 9 9 0 0 0 0-18Z M3 12h18 M12 3c3 3 3 15 0 18 M12 3c-3 3-3 15 0 18",
  switch_mode: "M4 8h13l-3-3 M20 16H7l3 3",
  other: "M12 4a8 8 0 1 0 0 16 8 8 0 0 0 0-16Z M12 11v5 M12 8v.5",
  question: "M12 3a9 9 0 1 0 0 18 9 9 0 0 0 0-18Z M9.5 9.5a2.5 2.5 0 1 1 3.5 2.3c-.6.3-1 .9-1 1.6v.6 M12 17v.5",
};

const LABELS: Record<string, string> = {
  read: "Read",
  edit: "Edit",
  delete: "Delete",
  move: "Move",
  search: "Search",
  execute: "Run a command",
  think: "Think",
  fetch: "Fetch",
  switch_mode: "Switch mode",
  other: "Other",
  question: "A question",
};

export function kindLabel(kind: string): string {
  return LABELS[kind] ?? LABELS.other ?? "Other";
}

export function KindIcon({ kind }: { kind: string }) {
  const known = kind in PATHS ? kind : "other";
  return (
    <svg
      class={`kind-icon kind-${known}`}
      viewBox="0 0 24 24"
      width="24"
      height="24"
      role="img"
      aria-label={kindLabel(known)}
      data-testid={`kind-${known}`}
    >
      <path
        d={PATHS[known]}
        fill="none"
        stroke="currentColor"
        stroke-width="2"
        stroke-linecap="round"
        stroke-linejoin="round"
      />
    </svg>
  );
}
