/**
 * Shown ÷ sent over 7 days (`GET /v1/devices`): real pushes to the fake push service
 * (`fake-push.ts`), real receipts through the routes the service worker calls, and the hub's
 * report asked at later days to walk through a week and its pruning.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type DeviceList, deviceListSchema } from "../../sdk/src/human/push";
import { fakePushService, type Phone } from "./fake-push";
import {
  api,
  connectAgent,
  createKey,
  hubStub,
  json,
  type Member,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import { addMember } from "./team-helpers";

const DAY_MS = 86_400_000;

let fake: ReturnType<typeof fakePushService>;
beforeEach(() => {
  fake = fakePushService();
});
afterEach(() => vi.restoreAllMocks());

/** `count` requests from one agent session; resolves once each went to every device expected. */
async function askMany(member: Member, count: number, pushesAfter: number): Promise<string[]> {
  const { key } = await createKey(member);
  const sessionId = unique("sess");
  const agent = await connectAgent(key, sessionId);
  for (let i = 1; i <= count; i++) await agent.ask(i, permissionParams(sessionId));
  await fake.untilPushes(pushesAfter);
  return (await pendingApprovals(member, sessionId)).map((a) => a.id);
}

function receipt(member: Member, phone: Phone, approvalId: string, event: "received" | "displayed" | "opened") {
  return api(`/v1/approvals/${approvalId}/receipt`, {
    method: "POST",
    cookie: member.cookie,
    body: JSON.stringify({ deviceId: phone.deviceId, event }),
  });
}

function seen(member: Member, phone: Phone, approvalId: string) {
  return api(`/v1/approvals/${approvalId}/seen`, {
    method: "POST",
    cookie: member.cookie,
    body: JSON.stringify({ deviceId: phone.deviceId }),
  });
}

async function devicesOf(member: Member): Promise<DeviceList> {
  const response = await api("/v1/devices", { cookie: member.cookie });
  expect(response.status).toBe(200);
  return deviceListSchema.parse(await json(response));
}

/** The hub's report for `member` as if asked at `now`, and the days it still stores after. */
async function reportAt(member: Member, now: number) {
  return runInDurableObject(hubStub(member.teamId), async (hub, state) => ({
    report: await hub.displayReport(member.userId, now),
    days: state.storage.sql
      .exec<{ day: number }>("SELECT DISTINCT day FROM display_days ORDER BY day")
      .toArray()
      .map((r) => r.day),
  }));
}

/** Moves every count and delivery of the team's hub `days` back, as if sent that long ago. */
async function age(member: Member, days: number): Promise<void> {
  await runInDurableObject(hubStub(member.teamId), (_, state) => {
    state.storage.sql.exec("UPDATE display_days SET day = day - ?", days);
    state.storage.sql.exec("UPDATE deliveries SET sent_day = sent_day - ?", days);
  });
}

describe("pushes shown ÷ sent, per device and per platform, over 7 days", () => {
  it("counts each first send and first shown receipt once, over the week, then prunes; the team's platforms only", async () => {
    const ada = await signUp("Ada");
    const bob = await addMember(ada, "approver", "Bob"); // before the hub reads the team's members
    await env.DB.prepare("UPDATE teams SET policy = ? WHERE id = ?")
      .bind(JSON.stringify({ notify: "all_approvers" }), ada.teamId)
      .run();
    const pixel = await fake.addPhone(ada, "Pixel 8");
    const iphone = await fake.addPhone(bob, "iPhone", "web.push.apple.com");
    // Another team with its own phone and receipts: never in Ada's team's figures.
    const eve = await signUp("Eve");
    const evePhone = await fake.addPhone(eve, "Eve's Pixel");
    const [eveAsk] = await askMany(eve, 1, 1);
    expect((await receipt(eve, evePhone, eveAsk as string, "displayed")).status).toBe(204);

    // Three days ago: 4 requests to both phones; the Pixel showed 2 (one `seen`, one `opened`).
    const early = await askMany(ada, 4, 1 + 8);
    const [a1, a2, a3] = early as [string, string, string];
    expect((await seen(ada, pixel, a1)).status).toBe(204);
    expect((await receipt(ada, pixel, a2, "opened")).status).toBe(204);
    expect((await receipt(ada, pixel, a2, "displayed")).status).toBe(204); // the same push: counted once
    expect((await receipt(ada, pixel, a3, "received")).status).toBe(204); // arrived, not shown (yet)
    await age(ada, 3);

    // Today: 4 more, all shown on the Pixel (retried receipts count once); the iPhone shows none.
    const late = await askMany(ada, 4, 1 + 16);
    for (const id of late) {
      expect((await receipt(ada, pixel, id, "displayed")).status).toBe(204);
      expect((await receipt(ada, pixel, id, "displayed")).status).toBe(204);
      expect((await receipt(ada, pixel, id, "opened")).status).toBe(204);
    }
    // A late receipt counts on the day its push was sent.
    expect((await receipt(ada, pixel, a3, "displayed")).status).toBe(204);

    const listed = await devicesOf(ada);
    expect(listed.devices).toEqual([
      expect.objectContaining({ id: pixel.deviceId, sent7d: 8, displayed7d: 7, displayedRatio: 7 / 8 }),
    ]);
    // The team's platforms: Ada's Pixel and Bob's iPhone, named by push service, never by device.
    expect(listed.platforms).toEqual([
      { platform: "apple", sent7d: 8, displayed7d: 0, displayedRatio: 0 },
      { platform: "fcm", sent7d: 8, displayed7d: 7, displayedRatio: 7 / 8 },
    ]);
    expect(JSON.stringify(listed)).not.toContain(iphone.deviceId);
    // Bob sees his own iPhone in full and the same team figures.
    const bobs = await devicesOf(bob);
    expect(bobs.devices).toEqual([
      expect.objectContaining({ id: iphone.deviceId, sent7d: 8, displayed7d: 0, displayedRatio: 0 }),
    ]);
    expect(bobs.platforms).toEqual(listed.platforms);
    // Eve's team counts only its own push.
    expect((await devicesOf(eve)).platforms).toEqual([
      { platform: "fcm", sent7d: 1, displayed7d: 1, displayedRatio: 1 },
    ]);

    // Walk the week forward from today's day (read back, so a test across midnight still holds).
    const { days } = await reportAt(ada, Date.now());
    const today = days.at(-1) as number;
    expect(days).toEqual([today - 3, today]);
    const noon = (day: number) => day * DAY_MS + DAY_MS / 2;
    // Four days on, the early batch left the window; the day's rows stay until pruned.
    expect((await reportAt(ada, noon(today + 4))).report.devices).toEqual({
      [pixel.deviceId]: { sent7d: 4, displayed7d: 4, displayedRatio: 1 },
    });
    // Six days on, today is still in; seven days on, nothing is, and the early batch (then 10 days old) is pruned.
    expect((await reportAt(ada, noon(today + 6))).report.devices[pixel.deviceId]?.sent7d).toBe(4);
    const week = await reportAt(ada, noon(today + 7));
    expect(week.report).toEqual({ devices: {}, platforms: [] });
    expect(week.days).toEqual([today]);
    // Eight days on, today's rows go too.
    expect((await reportAt(ada, noon(today + 8))).days).toEqual([]);
  }, 30_000);

  it("a push retried after a 500 counts as one sent", async () => {
    const ada = await signUp("Ada");
    const pixel = await fake.addPhone(ada, "Pixel 8");
    let calls = 0;
    fake.state.answer = () => (++calls === 1 ? 500 : 201);
    await askMany(ada, 1, 1);
    const hub = hubStub(ada.teamId);
    const alarm = await vi.waitFor(async () => {
      const at = await runInDurableObject(hub, (_, state) => state.storage.getAlarm());
      if (at === null) throw new Error("no alarm yet");
      return at;
    });
    await runInDurableObject(hub, (h) => h.drain(alarm)); // the alarm's moment: the retry goes out
    expect(fake.pushes).toHaveLength(2);
    expect((await devicesOf(ada)).devices).toEqual([
      expect.objectContaining({ id: pixel.deviceId, sent7d: 1, displayed7d: 0, displayedRatio: 0 }),
    ]);
  });

  it("a device with nothing sent shows zeros and no ratio", async () => {
    const ada = await signUp("Ada");
    const pixel = await fake.addPhone(ada, "Pixel 8");
    const listed = await devicesOf(ada);
    expect(listed).toEqual({
      devices: [expect.objectContaining({ id: pixel.deviceId, sent7d: 0, displayed7d: 0, displayedRatio: null })],
      platforms: [],
    });
  });
});
