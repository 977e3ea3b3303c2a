import type { ComponentChildren } from "preact";
import type { ApiError } from "../api";

/** A status line: "Offline", "Reconnecting…", errors. Announced politely, errors assertively. */
export function Banner({
  tone,
  testId,
  children,
}: {
  tone: "info" | "warn" | "error" | "ok";
  testId: string;
  children: ComponentChildren;
}) {
  return (
    <div class={`banner banner-${tone}`} role={tone === "error" ? "alert" : "status"} data-testid={testId}>
      {children}
    </div>
  );
}

/** A failed phone load: offline is a warning (the shared `offline-banner`) saying when `what` shows, else the server's message. */
export function LoadBanner({ error, testId, what }: { error: ApiError; testId: string; what: string }) {
  return (
    <Banner tone={error.offline ? "warn" : "error"} testId={error.offline ? "offline-banner" : testId}>
      {error.offline ? `Offline — ${what} shows when you are back online.` : error.message}
    </Banner>
  );
}
