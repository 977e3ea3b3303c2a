/** Which dropped sockets wait for their ends, and when those ends run; under plain Node. */
import { describe, expect, it } from "vitest";
import { CLOSE_FLOOR_MS, CLOSE_SPREAD_MS, ClosedSockets } from "./closed-sockets";

function harness(random = () => 0.25, fail = false) {
  const ended: string[][] = [];
  const timers: Array<{ ms: number; run: () => void }> = [];
  const closed = new ClosedSockets(
    {
      end: (socketIds) => {
        if (fail) throw new Error("storage failed");
        ended.push(socketIds);
      },
      later: (ms, run) => timers.push({ ms, run }),
    },
    random,
  );
  return { closed, ended, timers };
}

describe("ClosedSockets", () => {
  it("ends a storm's closes on one timer of a random delay within the spread", () => {
    const { closed, ended, timers } = harness();
    closed.add("s1");
    closed.add("s2");
    expect(ended).toEqual([]);
    expect(timers.map((t) => t.ms)).toEqual([CLOSE_FLOOR_MS + (CLOSE_SPREAD_MS - CLOSE_FLOOR_MS) * 0.25]);
    timers[0]?.run();
    expect(ended).toEqual([["s1", "s2"]]);
  });

  it("waits at least the floor and at most the spread", () => {
    for (const [random, ms] of [
      [0, CLOSE_FLOOR_MS],
      [1, CLOSE_SPREAD_MS],
    ] as const) {
      const { closed, timers } = harness(() => random);
      closed.add("s1");
      expect(timers.map((t) => t.ms)).toEqual([ms]);
    }
  });

  it("ends the waiting closes at the next event, before the timer, and only once", () => {
    const { closed, ended, timers } = harness();
    closed.add("s1");
    closed.endWaiting();
    expect(ended).toEqual([["s1"]]);
    timers[0]?.run();
    closed.endWaiting();
    expect(ended).toEqual([["s1"]]);
  });

  it("sets a new timer for a close after the last one ran", () => {
    const { closed, ended, timers } = harness();
    closed.add("s1");
    timers[0]?.run();
    closed.add("s2");
    expect(timers).toHaveLength(2);
    timers[1]?.run();
    expect(ended).toEqual([["s1"], ["s2"]]);
  });

  it("a failure to end them does not fail the handler that came next; they are not retried here", () => {
    const { closed, ended } = harness(() => 0.25, true);
    closed.add("s1");
    expect(() => closed.endWaiting()).not.toThrow();
    expect(ended).toEqual([]);
  });
});
