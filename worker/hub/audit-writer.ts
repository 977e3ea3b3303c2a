/**
 * The team's audit chain's one writer. Appends run one at a time (the D1 writes would otherwise
 * interleave across awaits), and each insert is a compare-and-swap on the chain head in D1, so
 * even a stale head here cannot fork it: it is re-read and retried. An event id already in the
 * log is skipped, so a replay never advances or forks the chain.
 *
 * Owns: the order of appends and `meta('audit_head')` (the cached chain head). Does not own:
 * the hashing (`audit-chain.ts`, pure), the SQL (`db/audit.ts`), or which events are written
 * (callers build them).
 */

import { type AuditEvent, chainEvents } from "../audit-chain";
import { insertAuditEntries, lastAuditHash, writtenEventIds } from "../db";
import type { HubHost } from "./host";

/** Attempts at appending when the chain head moved under us (another writer, a stale head). */
const AUDIT_ATTEMPTS = 3;
/** D1 binds at most 100 parameters per statement; replay checks go in pages of this size. */
const EVENT_ID_PAGE = 90;

export class AuditWriter {
  private tail: Promise<unknown> = Promise.resolve();

  constructor(private readonly host: HubHost) {}

  /** Appends the team's events in order; resolves once D1 has every one. */
  async append(teamId: string, events: AuditEvent[]): Promise<void> {
    if (events.some((e) => e.teamId !== teamId)) throw new Error("audit events of another team");
    const run = this.tail.then(() => this.write(teamId, events));
    this.tail = run.catch(() => undefined);
    await run;
  }

  private async write(teamId: string, events: AuditEvent[]): Promise<void> {
    let todo = [...new Map(events.map((e) => [e.eventId, e])).values()];
    let head = this.head();
    for (let attempt = 0; attempt < AUDIT_ATTEMPTS; attempt++) {
      if (head === null) {
        // First use, a restart mid-write, or a lost race: D1 is the record of where the chain is.
        head = await lastAuditHash(this.host.env.DB, teamId);
        todo = await this.unwritten(todo);
      }
      if (todo.length === 0) return this.saveHead(head);
      const entries = chainEvents(head, todo);
      this.host.sql.exec("DELETE FROM meta WHERE k = 'audit_head'");
      const written = await insertAuditEntries(this.host.env.DB, entries);
      if (written === entries.length) return this.saveHead((entries.at(-1) as { hash: string }).hash);
      head = null;
    }
    throw new Error("the audit chain head kept moving; try again");
  }

  private async unwritten(events: AuditEvent[]): Promise<AuditEvent[]> {
    const written = new Set<string>();
    for (let i = 0; i < events.length; i += EVENT_ID_PAGE) {
      const page = events.slice(i, i + EVENT_ID_PAGE).map((e) => e.eventId);
      for (const id of await writtenEventIds(this.host.env.DB, page)) written.add(id);
    }
    return events.filter((e) => !written.has(e.eventId));
  }

  private head(): string | null {
    return (
      (this.host.sql.exec("SELECT v FROM meta WHERE k = 'audit_head'").toArray()[0]?.v as string | undefined) ?? null
    );
  }

  private saveHead(hash: string): void {
    this.host.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('audit_head', ?)", hash);
  }
}
