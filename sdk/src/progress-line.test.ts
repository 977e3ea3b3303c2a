import { describe, expect, it } from "vitest";
import { progressLine } from "./progress-line.js";

const time = (at: number) => `t${at}`;
const base = { requestId: 1, approvalId: "apr_x", deliveredTo: [], seenBy: [] };

describe("progressLine", () => {
  it("says the furthest it got: seen, shown, delivered, nothing reached, or not yet", () => {
    const delivered = [{ name: "Ada", device: "Pixel", at: 1 }];
    expect(progressLine({ ...base }, time)).toBe("waiting — not delivered yet");
    expect(progressLine({ ...base, unreachable: true }, time)).toBe("waiting — no device could be reached");
    expect(progressLine({ ...base, deliveredTo: delivered }, time)).toBe("waiting — delivered to Ada's Pixel t1");
    const shown = [{ name: "Ada", device: "Pixel", at: 1, shownAt: 2 }];
    expect(progressLine({ ...base, deliveredTo: shown }, time)).toBe("waiting — shown on Ada's Pixel t2");
    const live = [{ name: "Ada", device: "app", at: 3, shownAt: 3 }];
    expect(progressLine({ ...base, deliveredTo: live }, time)).toBe("waiting — shown on Ada's open Tapgate t3");
    expect(progressLine({ ...base, deliveredTo: shown, seenBy: [{ name: "Ada", at: 4 }] }, time)).toBe(
      "waiting — seen by Ada t4",
    );
  });

  it("adds the escalation and the claim", () => {
    const line = progressLine(
      {
        ...base,
        unreachable: true,
        escalatedTo: { names: ["Ada"], via: "email", at: 5 },
        claimedBy: { name: "Bea", at: 6 },
      },
      time,
    );
    expect(line).toBe("waiting — no device could be reached; escalated to Ada by mail t5; claimed by Bea t6");
  });
});
