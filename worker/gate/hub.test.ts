/**
 * The gate's mail to its hub with the real Outbox: what one change tells travels in one
 * `gateReport` call, news never waits behind a flush in flight or a backoff, and a retry
 * replays rows, never news. The store is an in-memory stand-in for the outbox's tables; runs
 * under plain Node.
 */
import { describe, expect, it } from "vitest";
import type { OutboxOp } from "../db";
import type { VersionedPolicy } from "../policy";
import { type GateHub, type GateNews, type GateReportAnswer, HubMail } from "./hub";
import { Outbox } from "./outbox";
import type { OutboxStore } from "./outbox-store";

type Report = Parameters<GateHub["gateReport"]>[1];

function memoryOutbox() {
  let rows: Array<{ seq: number; op: string; attempts: number }> = [];
  let seq = 0;
  let backoff: unknown = null;
  const store = {
    enqueue: (op: OutboxOp) => void rows.push({ seq: ++seq, op: JSON.stringify(op), attempts: 0 }),
    waiting: (after: number) => rows.some((r) => r.seq > after),
    size: (after: number) => rows.filter((r) => r.seq > after).length,
    batch: (limit: number, _bytes: number, after: number) =>
      rows
        .filter((r) => r.seq > after)
        .slice(0, limit)
        .map((r) => ({ ...r, op: JSON.parse(r.op) })),
    deleteThrough: (last: number) => {
      rows = rows.filter((r) => r.seq > last);
    },
    countFailure: (seqs: number[]) => {
      for (const r of rows) if (seqs.includes(r.seq)) r.attempts++;
    },
    backoff: () => backoff,
    setBackoff: (b: unknown) => {
      backoff = b;
    },
    deadLetterReplay: () => null,
    deadLetterCount: () => 0,
  };
  return store as unknown as OutboxStore;
}

/** A hub whose answers the test gives when it likes: each call waits for `answer` or `fail`. */
function harness() {
  const calls: Array<{ report: Report; answer: (a?: GateReportAnswer) => void; fail: () => void }> = [];
  const policies: VersionedPolicy[] = [];
  const hub: GateHub = {
    admitRequest: () => Promise.reject(new Error("not in this test")),
    escalate: () => Promise.reject(new Error("not in this test")),
    keyRevokedLately: () => Promise.reject(new Error("not in this test")),
    gateReport: (_teamId, report) =>
      new Promise((resolve, reject) =>
        calls.push({ report, answer: (a = { policy: null }) => resolve(a), fail: () => reject(new Error("D1 down")) }),
      ),
  };
  const store = memoryOutbox();
  const mail: HubMail = new HubMail({
    hub: () => hub,
    background: () => undefined,
    flushOutbox: () => {
      if (outbox.flushDue()) void outbox.flush().catch(() => undefined);
    },
    newerPolicy: (_teamId, policy) => void policies.push(policy),
  });
  const outbox = new Outbox(store, {
    hub: () => hub,
    news: (teamId) => mail.take(teamId),
    answered: (teamId, answer) => mail.answered(teamId, answer),
    deadLettersChanged: () => undefined,
  });
  /** The `i`th call the hub got. */
  const call = (i: number) => {
    const c = calls[i];
    if (!c) throw new Error(`the hub got ${calls.length} calls, not ${i + 1}`);
    return c;
  };
  return { mail, outbox, calls, call, policies };
}

const row = (id: string): OutboxOp => ({ op: "audit", teamId: "team", id }) as unknown as OutboxOp;
const resolved = (id: string): GateNews => ({ kind: "resolved", approval: { id } as never, ownerUserId: "u" });
const kinds = (report: Report) => report.news.map((n) => n.kind);
const ids = (report: Report) => (report.ops ?? []).map((o) => (o as unknown as { id: string }).id);
/** Lets queued microtasks run (the mail's own end-of-turn send), not a wait for time. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("HubMail with the outbox", () => {
  it("sends one change's news and rows in one call", async () => {
    const { mail, outbox, calls, call } = harness();
    outbox.enqueue(row("r1"));
    mail.post("team", resolved("a1"));
    mail.post("team", { kind: "session", news: { sessionId: "s" } as never });
    mail.send();
    await settle();
    expect(calls).toHaveLength(1);
    expect(kinds(call(0).report)).toEqual(["resolved", "session"]);
    expect(ids(call(0).report)).toEqual(["r1"]);
  });

  it("sends news posted outside a change at the end of the turn, alone when there are no rows", async () => {
    const { mail, calls } = harness();
    mail.post("team", { kind: "released", approvalId: "a1" });
    expect(calls).toHaveLength(0);
    await settle();
    expect(calls.map((c) => [kinds(c.report), c.report.ops])).toEqual([[["released"], undefined]]);
  });

  it("does not hold news behind a flush in flight; the rows follow once it is acknowledged", async () => {
    const { mail, outbox, calls, call } = harness();
    outbox.enqueue(row("r1"));
    mail.send();
    outbox.enqueue(row("r2"));
    mail.post("team", resolved("a2"));
    mail.send();
    expect(calls.map((c) => [kinds(c.report), ids(c.report)])).toEqual([
      [[], ["r1"]],
      [["resolved"], []],
    ]);
    call(0).answer();
    await settle();
    expect(calls.map((c) => ids(c.report))).toEqual([["r1"], [], ["r2"]]);
  });

  it("sends news alone while the outbox backs off, and a retry replays the rows without the news", async () => {
    const { mail, outbox, calls, call } = harness();
    outbox.enqueue(row("r1"));
    mail.post("team", resolved("a1"));
    mail.send();
    call(0).fail();
    await settle();
    expect(outbox.flushDue()).toBe(false);
    mail.post("team", resolved("a2"));
    mail.send();
    expect(calls.map((c) => [kinds(c.report), ids(c.report)])).toEqual([
      [["resolved"], ["r1"]],
      [["resolved"], []],
    ]);
    void outbox.flush();
    expect(calls.map((c) => [kinds(c.report), ids(c.report)])[2]).toEqual([[], ["r1"]]);
  });

  it("takes up a newer policy from the hub's answer, whichever call carried the news", async () => {
    const { mail, outbox, call, policies } = harness();
    const newer = { version: 7 } as VersionedPolicy;
    mail.post("team", { kind: "session", news: { sessionId: "s" } as never });
    await settle();
    outbox.enqueue(row("r1"));
    mail.post("team", { kind: "session", news: { sessionId: "s" } as never });
    mail.send();
    call(0).answer({ policy: newer });
    call(1).answer({ policy: { version: 8 } as VersionedPolicy });
    await settle();
    expect(policies.map((p) => p.version)).toEqual([7, 8]);
  });
});
