/**
 * The hub's turns for gate reports, under plain Node with a hand-driven yield: a quiet hub starts
 * a report at once; a burst starts REPORTS_PER_TURN per turn, in the order it came.
 */
import { describe, expect, it } from "vitest";
import { REPORTS_PER_TURN, ReportTurns } from "./report-turns";

function driven(perTurn = REPORTS_PER_TURN) {
  const yields: Array<() => void> = [];
  const turns = new ReportTurns(perTurn, (next) => void yields.push(next));
  const started: number[] = [];
  const take = (i: number) => turns.take().then(() => void started.push(i));
  /** Lets every queued microtask run (the takes' continuations). */
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
  const nextTurn = async () => {
    const next = yields.shift();
    if (!next) throw new Error("no turn was scheduled");
    next();
    await settle();
  };
  return { turns, started, take, settle, nextTurn, yields };
}

describe("ReportTurns", () => {
  it("starts the first report of a quiet hub at once", async () => {
    const d = driven();
    void d.take(1);
    await d.settle();
    expect(d.started).toEqual([1]);
  });

  it("starts a burst a few per turn, in arrival order, and ends the turns once none wait", async () => {
    const d = driven(4);
    for (let i = 0; i < 10; i++) void d.take(i);
    await d.settle();
    expect(d.started).toEqual([0, 1, 2, 3]);
    expect(d.turns.backlog).toBe(6);
    await d.nextTurn();
    expect(d.started).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    await d.nextTurn();
    expect(d.started).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // One more turn finds none waiting: the hub is quiet again, and the next report starts at once.
    await d.nextTurn();
    expect(d.yields).toHaveLength(0);
    void d.take(10);
    await d.settle();
    expect(d.started.at(-1)).toBe(10);
  });

  it("queues a report that arrives while others wait behind them", async () => {
    const d = driven(2);
    for (let i = 0; i < 5; i++) void d.take(i);
    await d.nextTurn(); // 2 and 3 start; 4 still waits
    void d.take(5);
    await d.settle();
    expect(d.started).toEqual([0, 1, 2, 3]);
    await d.nextTurn();
    expect(d.started).toEqual([0, 1, 2, 3, 4, 5]);
  });
});
