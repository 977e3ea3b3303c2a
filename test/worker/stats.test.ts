import { describe, expect, it } from "vitest";
import { api, json, signUp } from "./helpers";
import { seedApprovals } from "./team-helpers";

const DAY = 86_400_000;
const day = (offset: number) => new Date(Date.now() - offset * DAY).toISOString().slice(0, 10);

describe("stats", () => {
  it("counts requests per day by outcome and gives decision latency percentiles, from SQL", async () => {
    const owner = await signUp();
    const other = await signUp();
    const noon = (offset: number) => Date.UTC(...ymd(Date.now() - offset * DAY)) + DAY / 2;
    // Today: 10 decisions with latencies 1..10 s; 3 days ago: a deny and an expiry; 40 days ago: outside.
    await seedApprovals(owner.teamId, [
      ...Array.from({ length: 10 }, (_, i) => ({
        ownerUserId: owner.userId,
        state: i < 7 ? ("allowed" as const) : ("denied" as const),
        createdAt: Math.min(noon(0), Date.now() - 60_000) - i,
        latencyMs: (i + 1) * 1000,
      })),
      { ownerUserId: owner.userId, state: "denied", createdAt: noon(3), latencyMs: 500 },
      { ownerUserId: owner.userId, state: "expired", reason: "expired", createdAt: noon(3), latencyMs: 600_000 },
      { ownerUserId: owner.userId, state: "cancelled", reason: "agent_cancelled", createdAt: noon(3) },
      { ownerUserId: owner.userId, state: "allowed", createdAt: noon(40), latencyMs: 99_000 },
      { ownerUserId: owner.userId, state: "pending", createdAt: noon(1) },
    ]);
    await seedApprovals(other.teamId, [{ ownerUserId: other.userId, state: "allowed", createdAt: noon(0) }]);

    const week = await json<{ days: Array<Record<string, unknown>>; latency: Record<string, number> }>(
      await api("/v1/stats?days=7", { cookie: owner.cookie }),
    );
    expect(week.days).toHaveLength(7);
    expect(week.days[0]?.date).toBe(day(6));
    expect(week.days.at(-1)).toEqual({ date: day(0), allowed: 7, denied: 3, cancelled: 0, expired: 0 });
    expect(week.days.find((d) => d.date === day(3))).toEqual({
      date: day(3),
      allowed: 0,
      denied: 1,
      cancelled: 1,
      expired: 1,
    });
    expect(week.days.find((d) => d.date === day(1))).toEqual({
      date: day(1),
      allowed: 0,
      denied: 0,
      cancelled: 0,
      expired: 0,
    });
    // Human decisions only (not the expiry): 1..10 s and 0.5 s → 11 values; nearest rank.
    expect(week.latency).toEqual({ count: 11, p50: 5000, p90: 9000 });

    const month = await json<{ days: unknown[]; latency: Record<string, number> }>(
      await api("/v1/stats?days=30", { cookie: owner.cookie }),
    );
    expect(month.days).toHaveLength(30);
    expect(month.latency.count).toBe(11);
    expect((await api("/v1/stats?days=9", { cookie: owner.cookie })).status).toBe(400);
  });

  it("an empty team has zero days and no percentiles", async () => {
    const owner = await signUp();
    const stats = await json<{ days: Array<Record<string, unknown>>; latency: unknown }>(
      await api("/v1/stats", { cookie: owner.cookie }),
    );
    expect(stats.days).toHaveLength(7);
    for (const day of stats.days) {
      expect(day).toEqual({ date: expect.any(String), allowed: 0, denied: 0, cancelled: 0, expired: 0 });
    }
    expect(stats.latency).toEqual({ count: 0, p50: null, p90: null });
  });
});

function ymd(at: number): [number, number, number] {
  const d = new Date(at);
  return [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()];
}
