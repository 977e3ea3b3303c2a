/**
 * How the hub reads a gate's report: every item starts in the order sent, before the rows are
 * written; only the session's answer and the write are awaited; a failing item fails alone, a
 * failing write fails the call. Runs under plain Node, against a recording stand-in for the
 * hub's methods (what they do is tested with the real hub in test/worker).
 */
import { describe, expect, it } from "vitest";
import type { VersionedPolicy } from "../policy";
import type { GateReport, OutboxOp } from "./api";
import { type NewsReader, readGateReport } from "./gate-report";

function recorder(fail: { write?: boolean; resolved?: boolean } = {}) {
  const started: string[] = [];
  const background: Array<Promise<unknown>> = [];
  let finishWrite: () => void = () => undefined;
  const hub: NewsReader = {
    approvalCreated: async () => void started.push("created"),
    approvalResolved: async () => {
      started.push("resolved");
      if (fail.resolved) throw new Error("directory unavailable");
    },
    approvalUpdated: async () => void started.push("updated"),
    releaseRequest: async () => void started.push("released"),
    sessionChanged: async () => {
      started.push("session");
      return { version: 3 } as VersionedPolicy;
    },
    writeOutbox: (_teamId, ops) => {
      started.push(`write ${ops.length}`);
      if (fail.write) return Promise.reject(new Error("D1 down"));
      return new Promise<void>((resolve) => (finishWrite = resolve));
    },
  };
  const read = (report: GateReport) => readGateReport(hub, "team", report, (work) => void background.push(work));
  return { read, started, background, finishWrite: () => finishWrite() };
}

const ops = [{ op: "audit" }, { op: "audit" }] as unknown as OutboxOp[];
const news: GateReport["news"] = [
  { kind: "created", news: {} as never },
  { kind: "resolved", approval: {} as never, ownerUserId: "u" },
  { kind: "session", news: {} as never },
  { kind: "released", approvalId: "a" },
];

describe("readGateReport", () => {
  it("starts every item in order before the write, and answers once D1 has the rows", async () => {
    const r = recorder();
    let answered = false;
    const reading = r.read({ news, ops }).then((answer) => {
      answered = true;
      return answer;
    });
    expect(r.started).toEqual(["created", "resolved", "session", "released", "write 2"]);
    expect(r.background).toHaveLength(3);
    await new Promise<void>((resolve) => setImmediate(resolve)); // every queued microtask has run
    expect(answered).toBe(false);
    r.finishWrite();
    expect(await reading).toEqual({ policy: { version: 3 } });
  });

  it("news alone answers without writing; a failing item fails alone", async () => {
    const r = recorder({ resolved: true });
    expect(await r.read({ news: news.slice(1, 2) })).toEqual({ policy: null });
    expect(r.started).toEqual(["resolved"]);
    await expect(Promise.all(r.background)).resolves.toEqual([undefined]);
  });

  it("rejects when the write failed, after the news was taken up", async () => {
    const r = recorder({ write: true });
    await expect(r.read({ news, ops })).rejects.toThrow("D1 down");
    expect(r.started.slice(0, 4)).toEqual(["created", "resolved", "session", "released"]);
  });

  it("takes an approval row that ended a request lately as its `resolved` news, once D1 has it", async () => {
    const r = recorder();
    const row = (id: string, state: string, resolvedAt: number | null) =>
      ({
        op: "approval",
        teamId: "team",
        ownerUserId: "u",
        approval: { id, state, resolvedAt },
      }) as unknown as OutboxOp;
    const reading = r.read({
      news: [],
      ops: [row("ended", "allowed", Date.now()), row("open", "pending", null), row("old", "denied", 1)],
    });
    expect(r.started).toEqual(["write 3"]);
    r.finishWrite();
    await reading;
    expect(r.started).toEqual(["write 3", "resolved"]);
  });
});
