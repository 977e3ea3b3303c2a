import { afterEach, describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import {
  fastAllowsFilter,
  type HistoryItem,
  type OversightFigures,
  rubberStamping,
  type Stats,
  statsSchema,
} from "../../sdk/src/human/history";
import { fakePushService } from "./fake-push";
import { api, askOnce, decide, flush, json, signUp } from "./helpers";
import { addMember, type SeedRow, seedApprovals } from "./team-helpers";

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

describe("rubber-stamping figures", () => {
  afterEach(() => vi.restoreAllMocks());

  /** Hand-computed: each row's decision time is resolved − (shownAt, else createdAt). */
  async function seededTeam() {
    const ada = await signUp("Ada");
    const bea = await addMember(ada, "approver", "Bea");
    const vic = await addMember(ada, "viewer", "Vic");
    const outsider = await signUp("Oz");
    const hourAgo = Date.now() - 3_600_000;
    const by = (m: { userId: string }, name: string, shownAfterMs?: number) => ({
      userId: m.userId,
      name,
      device: "web",
      ...(shownAfterMs !== undefined && { shownAt: hourAgo + shownAfterMs }),
    });
    /** A decision `ms` after the card was shown (`shownAfterMs` after creation, or at creation). */
    const decision = (
      who: ReturnType<typeof by>,
      state: "allowed" | "denied",
      ms: number,
      extra: Partial<SeedRow> = {},
    ): SeedRow => ({
      ownerUserId: ada.userId,
      state,
      createdAt: hourAgo,
      latencyMs: (who.shownAt ? who.shownAt - hourAgo : 0) + ms,
      decidedBy: who,
      ...extra,
    });
    const [adaFast1, adaFast2, adaFast3] = await seedApprovals(ada.teamId, [
      // Ada: allows of 500, 1 000 and 1 800 ms are fast (< 2 000); exactly 2 000 is not.
      decision(by(ada, "Ada", 1000), "allowed", 500),
      decision(by(ada, "Ada", 3000), "allowed", 1000),
      decision(by(ada, "Ada"), "allowed", 1800),
      decision(by(ada, "Ada", 100), "allowed", 10_000, { risk: "high" }),
      decision(by(ada, "Ada"), "denied", 700),
      decision(by(ada, "Ada", 5000), "allowed", 2000),
      // Bea: one fast allow of four (25 %, under the 30 % share); one older than 7 days.
      decision(by(bea, "Bea"), "allowed", 5000),
      decision(by(bea, "Bea"), "allowed", 6000),
      decision(by(bea, "Bea"), "allowed", 7000),
      decision(by(bea, "Bea", 1000), "allowed", 500),
      decision(by(bea, "Bea"), "denied", 3000),
      decision(by(bea, "Bea"), "allowed", 8000, { createdAt: Date.now() - 20 * DAY }),
      // Not human decisions, or not in any period, or not this team's: none counts.
      { ownerUserId: ada.userId, state: "expired", reason: "expired", createdAt: hourAgo, latencyMs: 600_000 },
      { ownerUserId: ada.userId, state: "allowed", reason: "rule", createdAt: hourAgo, latencyMs: 1 },
      { ownerUserId: ada.userId, state: "cancelled", reason: "agent_cancelled", createdAt: hourAgo },
      { ownerUserId: ada.userId, state: "pending", createdAt: hourAgo },
      decision(by(ada, "Ada"), "allowed", 100, { createdAt: Date.now() - 40 * DAY }),
    ]);
    await seedApprovals(outsider.teamId, [
      {
        ownerUserId: outsider.userId,
        state: "allowed",
        createdAt: hourAgo,
        latencyMs: 10,
        decidedBy: by(outsider, "Oz"),
      },
    ]);
    return { ada, bea, vic, fastOfAda: [adaFast1, adaFast2, adaFast3] };
  }

  const stats = async (cookie: string, days = 7) =>
    statsSchema.parse(await json<Stats>(await api(`/v1/stats?days=${days}`, { cookie })));
  const figures = (f: OversightFigures) => f;

  it("counts decisions, allows, nearest-rank decision times, fast and high-risk allows per approver and team", async () => {
    const { ada, bea, vic, fastOfAda } = await seededTeam();
    const week = await stats(ada.cookie);
    expect(week.rubberStamp).toEqual({ ms: 2000, share: 0.3 });
    // Ada, sorted: 500 700 1000 1800 2000 10000 (n = 6): p10 rank 1, p50 rank 3, p90 rank 6.
    const adaWeek = figures({
      decisions: 6,
      allows: 5,
      allowRate: 5 / 6,
      decideMs: { p10: 500, p50: 1000, p90: 10_000 },
      fastAllows: 3,
      highRiskAllows: 1,
    });
    // Bea, sorted: 500 3000 5000 6000 7000 (n = 5): p10 rank 1, p50 rank 3, p90 rank 5.
    const beaWeek = figures({
      decisions: 5,
      allows: 4,
      allowRate: 0.8,
      decideMs: { p10: 500, p50: 5000, p90: 7000 },
      fastAllows: 1,
      highRiskAllows: 0,
    });
    expect(week.approvers).toEqual([
      { userId: ada.userId, name: "Ada", ...adaWeek },
      { userId: bea.userId, name: "Bea", ...beaWeek },
    ]);
    // The team, sorted: 500 500 700 1000 1800 2000 3000 5000 6000 7000 10000 (n = 11): ranks 2, 6, 10.
    expect(week.team).toEqual({
      decisions: 11,
      allows: 9,
      allowRate: 9 / 11,
      decideMs: { p10: 500, p50: 2000, p90: 7000 },
      fastAllows: 4,
      highRiskAllows: 1,
    });
    // Ada passes the share (3 of 5 allows fast); Bea does not (1 of 4).
    expect(week.approvers.filter((a) => rubberStamping(a, week.rubberStamp)).map((a) => a.name)).toEqual(["Ada"]);

    // 30 days take in Bea's older allow: n = 12, ranks 2, 6, 11.
    const month = await stats(ada.cookie, 30);
    expect(month.team).toMatchObject({ decisions: 12, allows: 10, decideMs: { p10: 500, p50: 2000, p90: 8000 } });
    expect(month.approvers.find((a) => a.name === "Bea")).toMatchObject({ decisions: 6, allows: 5, fastAllows: 1 });

    // The requests behind Ada's flag are one history query away: her three fast allows, nothing else.
    const filter = fastAllowsFilter(ada.userId, week.rubberStamp, Date.now() - 7 * DAY);
    const query = new URLSearchParams(Object.entries(filter).map(([k, v]) => [k, String(v)]));
    const behind = await json<{ approvals: HistoryItem[] }>(await api(`/v1/history?${query}`, { cookie: ada.cookie }));
    expect(behind.approvals.map((a) => a.id).sort()).toEqual([...fastOfAda].sort());

    // A viewer sees the team's figures, not each person's.
    const viewed = await stats(vic.cookie);
    expect(viewed.team).toEqual(week.team);
    expect(viewed.approvers).toEqual([]);
    expect((await stats(bea.cookie)).approvers).toHaveLength(2);
  });

  it("counts a fast allow under the team policy's rubberStampMs", async () => {
    const { ada } = await seededTeam();
    const put = await api("/v1/policy", {
      method: "PUT",
      cookie: ada.cookie,
      body: JSON.stringify({ rubberStampMs: 1500, rubberStampShare: 0.5 }),
    });
    expect(put.status).toBe(200);
    const week = await stats(ada.cookie);
    expect(week.rubberStamp).toEqual({ ms: 1500, share: 0.5 });
    // Ada: 500 and 1 000 ms are under 1 500; 1 800 no longer is. 2 of 5 is under half: no flag.
    expect(week.approvers.find((a) => a.name === "Ada")).toMatchObject({ fastAllows: 2 });
    expect(week.approvers.some((a) => rubberStamping(a, week.rubberStamp))).toBe(false);
    expect(
      (await api("/v1/policy", { cookie: ada.cookie, method: "PUT", body: '{"rubberStampShare":1.5}' })).status,
    ).toBe(400);
  });

  it("records when the decider's device showed the card, and times the decision from then", async () => {
    const fake = fakePushService();
    const owner = await signUp("Ada");
    const phone = await fake.addPhone(owner);
    const { agent, approval, sessionId } = await askOnce(owner);
    await fake.untilPushes(1);
    const before = Date.now();
    const shown = await api(`/v1/approvals/${approval.id}/receipt`, {
      method: "POST",
      cookie: owner.cookie,
      body: JSON.stringify({ deviceId: phone.deviceId, event: "displayed" }),
    });
    expect(shown.status).toBe(204);
    const after = Date.now();
    // The gate hears it from the hub (the agent's progress says so), then the decision comes.
    await agent.nextProgress((p) => (p.seenBy as unknown[]).length > 0);
    const decided = await json<Approval>(await decide(owner, approval, "allow"));
    const shownAt = decided.decidedBy?.shownAt;
    expect(shownAt).toBeGreaterThanOrEqual(before);
    expect(shownAt).toBeLessThanOrEqual(after);
    await flush(owner.teamId, sessionId);
    const { approvals } = await json<{ approvals: HistoryItem[] }>(
      await api(`/v1/history?decider=${owner.userId}`, { cookie: owner.cookie }),
    );
    expect(approvals[0]?.decidedBy?.shownAt).toBe(shownAt);
    const week = await stats(owner.cookie);
    const ms = (decided.resolvedAt ?? 0) - (shownAt ?? 0);
    expect(week.team).toMatchObject({ decisions: 1, allows: 1, decideMs: { p10: ms, p50: ms, p90: ms } });
  });
});

function ymd(at: number): [number, number, number] {
  const d = new Date(at);
  return [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()];
}
