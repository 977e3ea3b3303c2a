/**
 * The hub's turns for gate reports, under plain Node with a hand-driven yield and clock: a quiet
 * hub starts a report at once; a burst starts a few per turn, in the order it came; turns grow
 * while their yields come back at once and shrink again when one comes back late.
 */
import { describe, expect, it } from "vitest";
import { QUIET_YIELD_MS, REPORTS_PER_TURN, REPORTS_PER_TURN_MAX, ReportTurns } from "./report-turns";

function driven() {
  const yields: Array<() => void> = [];
  let clock = 0;
  const turns = new ReportTurns(
    (next) => void yields.push(next),
    () => clock,
  );
  const started: number[] = [];
  const take = (i: number) => turns.take().then(() => void started.push(i));
  /** Lets every queued microtask run (the takes' continuations). */
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
  /** The yield comes back after `tookMs` (late: other work ran meanwhile). */
  const nextTurn = async (tookMs = QUIET_YIELD_MS + 1) => {
    const next = yields.shift();
    if (!next) throw new Error("no turn was scheduled");
    clock += tookMs;
    next();
    await settle();
  };
  const burst = (from: number, n: number) => {
    for (let i = from; i < from + n; i++) void take(i);
  };
  return { turns, started, take, settle, nextTurn, yields, burst };
}

const upTo = (n: number) => Array.from({ length: n }, (_, i) => i);

describe("ReportTurns", () => {
  it("starts the first report of a quiet hub at once", async () => {
    const d = driven();
    void d.take(0);
    await d.settle();
    expect(d.started).toEqual([0]);
  });

  it("starts a busy burst REPORTS_PER_TURN per turn, in arrival order, and goes quiet once none wait", async () => {
    const d = driven();
    d.burst(0, 2 * REPORTS_PER_TURN + 1);
    await d.settle();
    expect(d.started).toEqual(upTo(REPORTS_PER_TURN));
    expect(d.turns.backlog).toBe(REPORTS_PER_TURN + 1);
    await d.nextTurn();
    expect(d.started).toEqual(upTo(2 * REPORTS_PER_TURN));
    await d.nextTurn();
    expect(d.started).toEqual(upTo(2 * REPORTS_PER_TURN + 1));
    // One more turn finds none waiting: the hub is quiet again, and the next report starts at once.
    await d.nextTurn();
    expect(d.yields).toHaveLength(0);
    void d.take(99);
    await d.settle();
    expect(d.started.at(-1)).toBe(99);
  });

  it("queues a report that arrives while others wait behind them", async () => {
    const d = driven();
    d.burst(0, REPORTS_PER_TURN + 1);
    await d.settle();
    void d.take(100);
    await d.nextTurn();
    expect(d.started.slice(REPORTS_PER_TURN)).toEqual([REPORTS_PER_TURN, 100]);
  });

  it("doubles a turn while yields come back at once (up to the most), and falls back when one is late", async () => {
    const d = driven();
    d.burst(0, 1000);
    await d.settle();
    const perTurn: number[] = [];
    for (let turn = 0, before = d.started.length; turn < 6; turn++, before = d.started.length) {
      await d.nextTurn(0);
      perTurn.push(d.started.length - before);
    }
    const doubling = perTurn.map((_, turn) => Math.min(REPORTS_PER_TURN * 2 ** (turn + 1), REPORTS_PER_TURN_MAX));
    expect(perTurn).toEqual(doubling);
    expect(perTurn.at(-1)).toBe(REPORTS_PER_TURN_MAX);
    const before = d.started.length;
    await d.nextTurn(QUIET_YIELD_MS + 1);
    expect(d.started.length - before).toBe(REPORTS_PER_TURN);
    expect(d.started).toEqual(upTo(d.started.length));
  });
});
