import { describe, expect, it } from "vitest";
import type { Delivery } from "../../sdk/src/approval";
import { deviceHealthOf, SHOWN_WITHIN_MS } from "./device-health";

const NOW = 10_000_000;
const push = (over: Partial<Delivery> = {}): Delivery => ({
  deviceId: "dev_1",
  deviceName: "Pixel",
  userId: "usr_1",
  sentAt: NOW - 120_000,
  deliveredAt: NOW - 119_000,
  seenAt: null,
  failedAt: null,
  ...over,
});

describe("deviceHealthOf", () => {
  it("is ok with fewer than three pushes, or when any recent one was shown", () => {
    expect(deviceHealthOf([push({ failedAt: NOW }), push({ failedAt: NOW })], NOW)).toBe("ok");
    expect(deviceHealthOf([push(), push({ displayedAt: NOW - 100 }), push()], NOW)).toBe("ok");
  });

  it("flags a device whose last three pushes failed", () => {
    const failed = push({ deliveredAt: null, failedAt: NOW - 1 });
    expect(deviceHealthOf([failed, failed, failed, push({ displayedAt: NOW })], NOW)).toBe("failing");
  });

  it("flags a device that took three pushes and showed none, once they had time to show", () => {
    expect(deviceHealthOf([push(), push(), push()], NOW)).toBe("not_shown");
    const fresh = push({ deliveredAt: NOW - SHOWN_WITHIN_MS + 1 });
    expect(deviceHealthOf([fresh, push(), push()], NOW)).toBe("ok");
  });
});
