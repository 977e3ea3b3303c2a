import { describe, expect, it } from "vitest";
import { PUSH_WINDOW_MS, PUSHES_PER_WINDOW, pushDecision } from "./push-budget";

describe("push fatigue, per device", () => {
  const now = 1_000_000_000;
  it("pushes each request while the device is under its budget", () => {
    expect(pushDecision({ sent: 0, summaryAt: 0, now })).toBe("approval");
    expect(pushDecision({ sent: PUSHES_PER_WINDOW - 1, summaryAt: 0, now })).toBe("approval");
  });
  it("past the budget: one summary per window, then silence", () => {
    expect(pushDecision({ sent: PUSHES_PER_WINDOW, summaryAt: 0, now })).toBe("summary");
    expect(pushDecision({ sent: PUSHES_PER_WINDOW + 5, summaryAt: now - 1, now })).toBe("none");
    expect(pushDecision({ sent: PUSHES_PER_WINDOW, summaryAt: now - PUSH_WINDOW_MS + 1, now })).toBe("none");
    expect(pushDecision({ sent: PUSHES_PER_WINDOW, summaryAt: now - PUSH_WINDOW_MS, now })).toBe("summary");
  });
  it("a device whose window emptied is pushed again, whatever its last summary", () => {
    expect(pushDecision({ sent: 0, summaryAt: now - 1, now })).toBe("approval");
  });
});
