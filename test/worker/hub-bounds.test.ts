/**
 * The hub's own bounds: one drain sends at most DRAIN_PER_TURN pushes (the rest on the next
 * alarm turn), concurrent directory loads read D1 once (single flight), and a receipt the
 * service worker sends twice tells the cards and the gate once. A fake push service stands for
 * what is outside.
 */
import { runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { SessionGate as Gate } from "../../worker/gate/session-gate";
import type { Directory } from "../../worker/hub/directory";
import { LiveFeed } from "../../worker/hub/live-feed";
import { DRAIN_PER_TURN } from "../../worker/hub/push-queue";
import type { TeamHub } from "../../worker/hub/team-hub";
import type { Env } from "../../worker/types";
import { fakePushService } from "./fake-push";
import { api, askOnce, hubStub, signUp } from "./helpers";

let fake: ReturnType<typeof fakePushService>;
beforeEach(() => {
  fake = fakePushService();
});
afterEach(() => vi.restoreAllMocks());

const internals = (hub: TeamHub) => {
  const inside = hub as unknown as { parts: { directory: Directory }; env: Env };
  return { directory: inside.parts.directory, env: inside.env };
};

describe("the hub's bounds", () => {
  it("one drain sends at most DRAIN_PER_TURN pushes; the next alarm turn sends the rest", async () => {
    const owner = await signUp();
    const phone = await fake.addPhone(owner, "Pixel 8");
    const burst = DRAIN_PER_TURN + 10;
    const firstTurn = await runInDurableObject(hubStub(owner.teamId), async (hub: TeamHub, state) => {
      for (let i = 0; i < burst; i++) {
        state.storage.sql.exec(
          `INSERT INTO push_queue (device_id, approval_id, payload, urgency, expires_at, next_at)
           VALUES (?, NULL, '{"v":1,"type":"test"}', 'normal', ?, ?)`,
          phone.deviceId,
          Date.now() + 60_000,
          Date.now(),
        );
      }
      await hub.drain(Date.now());
      return fake.to(phone).length;
    });
    expect(firstTurn).toBe(DRAIN_PER_TURN);
    // The hub's alarm comes back at once for the rest.
    await vi.waitFor(() => {
      if (fake.to(phone).length < burst) throw new Error(`${fake.to(phone).length} sent`);
    });
    expect(fake.to(phone)).toHaveLength(burst);
  });

  it("concurrent directory loads read D1 once", async () => {
    const { owner } = await askOnce();
    await runInDurableObject(hubStub(owner.teamId), async (hub: TeamHub) => {
      const { directory, env } = internals(hub);
      const prepare = vi.spyOn(env.DB, "prepare");
      directory.forget();
      await directory.load();
      const oneLoad = prepare.mock.calls.length;
      expect(oneLoad).toBeGreaterThan(0);
      prepare.mockClear();
      directory.forget();
      await Promise.all([directory.load(), directory.load(), directory.load()]);
      expect(prepare.mock.calls.length).toBe(oneLoad);
    });
  });

  it("a receipt sent twice shows on the cards and reaches the gate once", async () => {
    const owner = await signUp();
    const phone = await fake.addPhone(owner, "Pixel 8");
    const { approval } = await askOnce(owner);
    await fake.untilPushes(1);
    const broadcasts = vi.spyOn(LiveFeed.prototype, "broadcast");
    const told = vi.spyOn(Gate.prototype, "deliveryChanged");
    const toldOf = () => told.mock.calls.filter(([, id]) => id === approval.id).map(([, , receipts]) => receipts);
    const receipt = () =>
      api(`/v1/approvals/${approval.id}/receipt`, {
        method: "POST",
        cookie: owner.cookie,
        body: JSON.stringify({ deviceId: phone.deviceId, event: "displayed" }),
      });
    expect((await receipt()).status).toBe(204);
    const once = broadcasts.mock.calls.filter(([, id]) => id === approval.id).length;
    expect(once).toBe(1);
    expect((await receipt()).status).toBe(204);
    expect(broadcasts.mock.calls.filter(([, id]) => id === approval.id)).toHaveLength(once);
    // The gate hears a request's receipts one report at a time, in order: once a claim's report
    // reached it, every receipt's turn before it is over. It never heard the same receipts twice.
    const claim = await api(`/v1/approvals/${approval.id}/claim`, { method: "POST", cookie: owner.cookie, body: "{}" });
    expect(claim.status).toBe(200);
    await vi.waitFor(() => expect(toldOf().at(-1)?.claimedBy).toBeDefined());
    const reports = toldOf().map((r) => JSON.stringify(r));
    expect(reports.some((r) => r.includes('"shownAt"'))).toBe(true);
    expect(new Set(reports).size).toBe(reports.length);
  });
});
