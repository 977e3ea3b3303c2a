import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DeadlineExceeded, orFallback, waitAtMost, withDeadline } from "./deadline";

describe("withDeadline", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("answers what the call answered in time", async () => {
    await expect(withDeadline(Promise.resolve(7), 2_000, "hub.policy")).resolves.toBe(7);
    await expect(withDeadline(Promise.reject(new Error("boom")), 2_000, "hub.policy")).rejects.toThrow("boom");
  });

  it("rejects with DeadlineExceeded, naming the call, once the budget has passed", async () => {
    const bounded = withDeadline(new Promise<never>(() => undefined), 2_000, "hub.currentRole");
    const seen = bounded.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(1_999);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    const error = await seen;
    expect(error).toBeInstanceOf(DeadlineExceeded);
    expect(error).toMatchObject({ what: "hub.currentRole", ms: 2_000 });
  });

  it("leaves no timer behind an answer", async () => {
    await withDeadline(Promise.resolve(1), 5_000, "hub.escalate");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("orFallback answers the fallback for a late or failed call", async () => {
    const late = orFallback(new Promise<string>(() => undefined), 2_000, "hub.deliveries", "fallback");
    await vi.advanceTimersByTimeAsync(2_000);
    await expect(late).resolves.toBe("fallback");
    await expect(orFallback(Promise.reject(new Error("x")), 2_000, "hub.timeline", "fb")).resolves.toBe("fb");
  });

  it("waitAtMost goes on after the budget without a word, and logs a call that failed", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    let finished = false;
    const waited = waitAtMost(new Promise<never>(() => undefined), 1_000, "hub.policyFanOut").then(() => {
      finished = true;
    });
    await vi.advanceTimersByTimeAsync(999);
    expect(finished).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await waited;
    expect(logged).not.toHaveBeenCalled();
    await waitAtMost(Promise.reject(new Error("storage failed")), 1_000, "hub.revocationFanOut");
    expect(logged).toHaveBeenCalledWith(expect.stringContaining("hub.revocationFanOut failed: Error: storage failed"));
    logged.mockRestore();
  });
});
