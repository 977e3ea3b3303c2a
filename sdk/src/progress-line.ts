/**
 * One line for a person watching a terminal: where a permission request stands, from its
 * `_tapgate/progress` (pure, unit-tested in `progress-line.test.ts`). `tapgate acp`, `run` and
 * `claude-hook` print it on stderr each time it changes.
 *
 * Owns: the words. Does not own: the progress itself (the gate) or where the line goes (the CLI).
 */
import type { Progress } from "./protocol.js";

/** HH:MM:SS in local time. */
export function clockTime(at: number): string {
  return new Date(at).toTimeString().slice(0, 8);
}

/** e.g. "waiting — shown on Ada's Pixel 12:03:04". */
export function progressLine(p: Progress, time: (at: number) => string = clockTime): string {
  const parts: string[] = [];
  const seen = p.seenBy.at(-1);
  const shown = p.deliveredTo.filter((d) => d.shownAt !== undefined).at(-1);
  const delivered = p.deliveredTo.at(-1);
  const where = (d: { name: string; device: string }) =>
    d.device === "app" ? `${d.name}'s open Tapgate` : `${d.name}'s ${d.device}`;
  if (seen) parts.push(`seen by ${seen.name} ${time(seen.at)}`);
  else if (shown) parts.push(`shown on ${where(shown)} ${time(shown.shownAt as number)}`);
  else if (delivered) parts.push(`delivered to ${where(delivered)} ${time(delivered.at)}`);
  else if (p.unreachable) parts.push("no device could be reached");
  else parts.push("not delivered yet");
  if (p.escalatedTo) {
    const via = p.escalatedTo.via === "email" ? "mail" : "push";
    parts.push(`escalated to ${p.escalatedTo.names.join(", ") || "nobody"} by ${via} ${time(p.escalatedTo.at)}`);
  }
  if (p.claimedBy) parts.push(`claimed by ${p.claimedBy.name} ${time(p.claimedBy.at)}`);
  return `waiting — ${parts.join("; ")}`;
}
