import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LongPolls } from "./http-agents";

describe("long polls", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("a wake ends every wait on that approval at once, and no other", async () => {
    const polls = new LongPolls();
    const woken: string[] = [];
    void polls.wait("a", 50_000).then(() => woken.push("a1"));
    void polls.wait("a", 50_000).then(() => woken.push("a2"));
    void polls.wait("b", 50_000).then(() => woken.push("b"));
    expect(polls.size).toBe(2);
    polls.wake("a");
    await vi.advanceTimersByTimeAsync(0);
    expect(woken).toEqual(["a1", "a2"]);
    expect(polls.size).toBe(1);
  });

  it("a wait that runs out leaves no waiter behind, and a late wake is harmless", async () => {
    const polls = new LongPolls();
    let done = false;
    void polls.wait("a", 1_000).then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(done).toBe(true);
    expect(polls.size).toBe(0);
    polls.wake("a");
    expect(polls.size).toBe(0);
  });
});
