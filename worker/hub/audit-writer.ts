/**
 * The team's audit chain's one writer. Appends run one at a time (the D1 writes would otherwise
 * interleave across awaits), and each insert is a compare-and-swap on the chain head in D1, so
 * even a stale head here cannot fork it: it is re-read and retried. An event id already in the
 * log is skipped, so a replay never advances or forks the chain.
 *
 * It anchors the chain: after every append it keeps the head it wrote (count, seq, hash) in the
 * hub's own storage, out of reach of whoever can edit D1, and `GET /v1/audit/verify` checks D1
 * against it. When a re-read finds the anchored row gone or changed, that anchor is kept for
 * good (`meta('audit_lost')`), so writing on after a truncation cannot hide it.
 *
 * It also drains the route-side audit outbox in D1 (`audit_outbox`): events the use cases
 * queued with their action, chained here and only then removed.
 *
 * Group commit: appends that arrive while a write is in flight wait for the next one, which
 * takes all of them (up to `GROUP_EVENTS` events) as ONE D1 batch: the SessionGates' index rows
 * (`OutboxOp`s, idempotent upserts) first, then the new entries as one compare-and-swap per run
 * (`auditRunStatement`). A burst of decisions across the team's sessions so costs a few D1
 * statements, not several per decision, and the queue is bounded by the callers (each gate
 * flushes one batch at a time, awaiting this). A group is bounded by rows and by bytes
 * (`GROUP_BYTES`). A group whose write fails is written again caller by caller, so one caller's
 * poison row fails only that caller; a caller that fails alone gets the error and its outbox
 * retries (both kinds of row are idempotent).
 *
 * The webhook queue (`webhooks/deliveries.ts`, the `follower`) rides in the same batch after the
 * entries, so an entry in the chain always has its messages queued.
 *
 * Owns: the order of appends, the groups, `meta('audit_anchor')`, `meta('audit_lost')` and
 * draining the outbox. Does not own: the hashing and head checks (`audit-chain.ts`, pure), the SQL
 * (`db/audit.ts`), or which events are written (callers build them).
 */

import { type AuditAnchors, type AuditEntry, type AuditEvent, type AuditHead, chainEvents } from "../audit-chain";
import {
  auditHashAt,
  auditTail,
  type D1OutboxOp,
  dequeueAuditEvents,
  insertAuditEntries,
  outboxStatement,
  queuedAuditEvents,
  writtenEventIds,
} from "../db";
import type { HubHost } from "./host";

/** Attempts at appending when the chain head moved under us (another writer, a stale head). */
const AUDIT_ATTEMPTS = 3;
/** D1 binds at most 100 parameters per statement; replay checks and drains go in pages of this size. */
const EVENT_ID_PAGE = 90;
/** The most events (and, separately, index rows) one group commit takes; the rest wait for the next. */
const GROUP_EVENTS = 500;
/** The most JSON (events and index rows) one group commit carries; one caller's share always goes. */
const GROUP_BYTES = 2 * 1024 * 1024;
/** How often an append also looks for route events queued in D1 that nobody asked us to chain. */
const OPPORTUNISTIC_DRAIN_MS = 10_000;

/** A statement that follows every run of entries in their batch, and what its result says. */
export interface AuditFollower {
  statement(teamId: string, entries: AuditEntry[]): D1PreparedStatement;
  written(rows: number): Promise<void>;
}

/** One caller's share of a group commit. */
interface Waiting {
  events: AuditEvent[];
  index: D1OutboxOp[];
  /** Their JSON's length, what a group is bounded by besides its rows. */
  bytes: number;
  settle: (error?: unknown) => void;
}

export class AuditWriter {
  private tail: Promise<unknown> = Promise.resolve();
  private readonly waiting: Waiting[] = [];
  private grouping = false;
  private drainedAt = 0;

  constructor(
    private readonly host: HubHost,
    /** What rides in the batch after the entries (the webhook queue), and hears what it did. */
    private readonly follower?: AuditFollower,
  ) {}

  /**
   * Appends the team's events in order, after writing `index` (a gate's D1 rows) in the same
   * batch; resolves once D1 has every one. Calls that arrive during a write share the next one.
   */
  append(teamId: string, events: AuditEvent[], index: D1OutboxOp[] = []): Promise<void> {
    if (events.some((e) => e.teamId !== teamId) || index.some((o) => o.teamId !== teamId))
      return Promise.reject(new Error("audit events of another team"));
    return new Promise((resolve, reject) => {
      const bytes = JSON.stringify(events).length + JSON.stringify(index).length;
      this.waiting.push({ events, index, bytes, settle: (error) => (error === undefined ? resolve() : reject(error)) });
      this.startGroups(teamId);
    });
  }

  /** Writes waiting appends group by group, in arrival order, until none wait. */
  private startGroups(teamId: string): void {
    if (this.grouping) return;
    this.grouping = true;
    void this.serially(async () => {
      while (this.waiting.length > 0) {
        const group = this.nextGroup();
        try {
          await this.write(
            teamId,
            group.flatMap((w) => w.events),
            group.flatMap((w) => w.index),
          );
          for (const w of group) w.settle();
        } catch (error) {
          if (group.length === 1) group[0]?.settle(error ?? new Error("audit write failed"));
          // One caller's poison row must not fail the others: each is written again alone.
          else for (const w of group) await this.writeAlone(teamId, w);
        }
      }
    }).finally(() => {
      this.grouping = false;
      if (this.waiting.length > 0) this.startGroups(teamId);
    });
  }

  private async writeAlone(teamId: string, w: Waiting): Promise<void> {
    try {
      await this.write(teamId, w.events, w.index);
      w.settle();
    } catch (error) {
      w.settle(error ?? new Error("audit write failed"));
    }
  }

  /** The oldest waiting appends, up to GROUP_EVENTS events and index rows and GROUP_BYTES (always at least one). */
  private nextGroup(): Waiting[] {
    let events = 0;
    let rows = 0;
    let bytes = 0;
    let take = 0;
    for (const w of this.waiting) {
      const over =
        events + w.events.length > GROUP_EVENTS ||
        rows + w.index.length > GROUP_EVENTS ||
        bytes + w.bytes > GROUP_BYTES;
      if (take > 0 && over) break;
      events += w.events.length;
      rows += w.index.length;
      bytes += w.bytes;
      take++;
    }
    return this.waiting.splice(0, take);
  }

  /** Chains what the routes queued in D1, oldest first; each page leaves the outbox once chained. */
  drain(teamId: string): Promise<void> {
    return this.serially(async () => {
      for (;;) {
        const queued = (await queuedAuditEvents(this.host.env.DB, teamId, EVENT_ID_PAGE)).filter(
          (e) => e.teamId === teamId,
        );
        if (queued.length === 0) return;
        await this.write(teamId, queued);
        await dequeueAuditEvents(
          this.host.env.DB,
          queued.map((e) => e.eventId),
        );
        if (queued.length < EVENT_ID_PAGE) return;
      }
    });
  }

  /** `drain`, with a failure logged instead of thrown: it is retried on the next drain. */
  async drainQuietly(teamId: string | null): Promise<void> {
    if (!teamId) return;
    try {
      await this.drain(teamId);
    } catch (error) {
      console.error(`audit outbox: drain failed, kept for the next one: ${String(error).slice(0, 200)}`);
    }
  }

  /**
   * Events a route queued while its call to the hub failed ride along with an append, at most
   * every 10 s (a busy session appends often); the caller's own events are in, whatever happens here.
   */
  async drainSometimes(teamId: string | null, now = Date.now()): Promise<void> {
    if (now - this.drainedAt < OPPORTUNISTIC_DRAIN_MS) return;
    this.drainedAt = now;
    await this.drainQuietly(teamId);
  }

  /** The anchor (taken from D1 on first use, when the hub never wrote one) and any lost one. */
  anchors(teamId: string): Promise<AuditAnchors> {
    return this.serially(async () => {
      const anchor = this.stored("audit_anchor") ?? (await this.reread(teamId));
      this.save("audit_anchor", anchor);
      return { anchor, lost: this.stored("audit_lost") };
    });
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.tail.then(work);
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async write(teamId: string, events: AuditEvent[], index: D1OutboxOp[] = []): Promise<void> {
    let todo = [...new Map(events.map((e) => [e.eventId, e])).values()];
    // The index rows ride in the first batch that commits; a retry after a moved head needs only the chain.
    let before = index.map((o) => outboxStatement(this.host.env.DB, o));
    if (todo.length === 0) {
      if (before.length > 0) await this.host.env.DB.batch(before);
      return;
    }
    let head = this.stored("audit_anchor");
    for (let attempt = 0; attempt < AUDIT_ATTEMPTS; attempt++) {
      if (head === null) {
        // First use, a restart mid-write, or a lost race: D1 is the record of where the chain is.
        head = await this.reread(teamId);
        todo = await this.unwritten(todo);
      }
      if (todo.length === 0) {
        if (before.length > 0) await this.host.env.DB.batch(before);
        return this.save("audit_anchor", head);
      }
      const entries = chainEvents(head.hash, todo);
      const follow = this.follower?.statement(teamId, entries);
      const { seqs, after } = await insertAuditEntries(this.host.env.DB, entries, before, follow ? [follow] : []);
      before = [];
      if (after[0]) await this.follower?.written(after[0].results.length);
      const last = entries.at(-1);
      if (seqs.length === entries.length && last) {
        const seq = seqs.at(-1) as number;
        return this.save("audit_anchor", {
          teamId,
          count: head.count + seqs.length,
          seq,
          hash: last.hash,
          at: last.at,
        });
      }
      head = null;
    }
    throw new Error("the audit chain head kept moving; try again");
  }

  /**
   * Where D1's chain ends, after checking it still holds the anchored row: if that row is gone
   * or changed, the anchor is kept as lost (the first one only), for verify to report.
   */
  private async reread(teamId: string): Promise<AuditHead> {
    const tail = await auditTail(this.host.env.DB, teamId);
    const anchor = this.stored("audit_anchor");
    if (anchor && anchor.count > 0 && !this.stored("audit_lost")) {
      const hash = tail.seq === anchor.seq ? tail.hash : await auditHashAt(this.host.env.DB, teamId, anchor.seq);
      if (hash !== anchor.hash || tail.count < anchor.count) this.save("audit_lost", anchor);
    }
    return { teamId, ...tail };
  }

  private async unwritten(events: AuditEvent[]): Promise<AuditEvent[]> {
    const written = new Set<string>();
    for (let i = 0; i < events.length; i += EVENT_ID_PAGE) {
      const page = events.slice(i, i + EVENT_ID_PAGE).map((e) => e.eventId);
      for (const id of await writtenEventIds(this.host.env.DB, page)) written.add(id);
    }
    return events.filter((e) => !written.has(e.eventId));
  }

  private stored(key: "audit_anchor" | "audit_lost"): AuditHead | null {
    const v = this.host.sql.exec("SELECT v FROM meta WHERE k = ?", key).toArray()[0]?.v;
    return typeof v === "string" ? (JSON.parse(v) as AuditHead) : null;
  }

  private save(key: "audit_anchor" | "audit_lost", head: AuditHead): void {
    this.host.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)", key, JSON.stringify(head));
  }
}
