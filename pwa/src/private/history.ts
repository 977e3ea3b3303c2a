/**
 * History of private requests in the browser (docs/threat-model.md "Private mode"): the service
 * cannot search or export what it never read, so this device does, over the rows it loaded and
 * opened: the words a search looks in, and the CSV of the opened private rows.
 *
 * Owns: those two. Does not own: opening (use-private.ts) or the server's export (worker/routes/history.ts).
 */
import type { Approval } from "../../../sdk/src/approval";
import { csvLines } from "../../../sdk/src/csv";
import { asRecord } from "../components/ToolContent";
import { describeApproval } from "../format";
import { readable, type Seen } from "./use-private";

/** Whether a loaded row matches a search typed here (a private row only once it opened). */
export function matchesSearch(s: Seen<Approval>, query: string): boolean {
  const q = query.trim().toLowerCase();
  if (!q) return true;
  if (!readable(s)) return false;
  const d = describeApproval(s.approval);
  const { session, toolCall } = s.approval.snapshot;
  const command = asRecord(toolCall.rawInput).command;
  return [d.title, d.sessionTitle, session.cwd, session.host, typeof command === "string" ? command : null]
    .filter((t): t is string => typeof t === "string")
    .some((t) => t.toLowerCase().includes(q));
}

const COLUMNS = [
  "id",
  "sessionId",
  "session",
  "title",
  "command",
  "state",
  "reason",
  "decidedBy",
  "createdAt",
  "resolvedAt",
];

/** A CSV of the private rows this device opened, with what the agent asked. */
export function privateRowsCsv(rows: ReadonlyArray<Seen<Approval>>): string {
  const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
  return csvLines([
    COLUMNS,
    ...rows
      .filter((s) => s.private === "opened")
      .map(({ approval: a }) => {
        const d = describeApproval(a);
        const command = asRecord(a.snapshot.toolCall.rawInput).command;
        return [
          a.id,
          a.sessionId,
          d.sessionTitle,
          d.title,
          typeof command === "string" ? command : null,
          a.state,
          a.reason,
          a.decidedBy?.name ?? null,
          iso(a.createdAt),
          iso(a.resolvedAt),
        ];
      }),
  ]);
}
