import type { ComponentChildren } from "preact";

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
