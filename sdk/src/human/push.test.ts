import { describe, expect, it } from "vitest";
import { showsTooFew } from "./push.js";

const figures = (sent7d: number, displayed7d: number) => ({
  sent7d,
  displayed7d,
  displayedRatio: sent7d === 0 ? null : displayed7d / sent7d,
});

describe("showsTooFew", () => {
  it("flags under 95 % shown from 5 sent on, and never with fewer sent", () => {
    expect(showsTooFew(figures(5, 4))).toBe(true);
    expect(showsTooFew(figures(100, 94))).toBe(true);
    expect(showsTooFew(figures(100, 95))).toBe(false);
    expect(showsTooFew(figures(20, 19))).toBe(false); // 95 % exactly
    expect(showsTooFew(figures(4, 0))).toBe(false); // too few sent to mean anything
    expect(showsTooFew(figures(0, 0))).toBe(false);
  });
});
