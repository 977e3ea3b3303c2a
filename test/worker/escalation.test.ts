/**
 * The escalation ladder, end to end in workerd: a fake push service (outbound fetch captured)
 * and the dev outbox as the fake mail provider. Time moves forward by running the gate's
 * escalation at a chosen moment (`escalateDue(now)`, the alarm's share), never by sleeping.
 */
import { runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Approval, ApprovalDetail } from "../../sdk/src/approval";
import type { LadderStore } from "../../worker/gate/ladder-store";
import { SessionGate } from "../../worker/gate/session-gate";
import type { EscalationOrder } from "../../worker/hub/api";
import type { Escalations } from "../../worker/hub/escalation";
import type { LiveFeed } from "../../worker/hub/live-feed";
import { TeamHub } from "../../worker/hub/team-hub";
import { fakePushService } from "./fake-push";
import {
  api,
  connectAgent,
  createKey,
  decide,
  flush,
  gateStub,
  hubStub,
  json,
  type Member,
  outbox,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import { addMember, openLive } from "./team-helpers";

let fake: ReturnType<typeof fakePushService>;
beforeEach(() => {
  fake = fakePushService();
});
afterEach(() => vi.restoreAllMocks());

/** Asks once over a socket: a permission request unless `method` and `params` say otherwise. */
async function ask(
  owner: Member,
  method = "session/request_permission",
  params: (sessionId: string) => object = permissionParams,
) {
  const { key } = await createKey(owner);
  const sessionId = unique("sess");
  const agent = await connectAgent(key, sessionId);
  await agent.send({ jsonrpc: "2.0", id: 1, method, params: params(sessionId) });
  const [approval] = await pendingApprovals(owner, sessionId);
  if (!approval) throw new Error("not pending");
  /** Runs the ladder at `createdAt + ms`, as the alarm would then. */
  const at = (ms: number) =>
    runInDurableObject(gateStub(owner.teamId, sessionId), (gate) => gate.escalateDue(approval.createdAt + ms));
  return { agent, sessionId, approval, at };
}

/** Records every escalation order a team's hub is given. */
function spyOnEscalate(): EscalationOrder[] {
  const orders: EscalationOrder[] = [];
  const original = TeamHub.prototype.escalate;
  vi.spyOn(TeamHub.prototype, "escalate").mockImplementation(function (this: TeamHub, ...args) {
    orders.push(args[1]);
    return original.apply(this, args);
  });
  return orders;
}

const approvalsTo = (phone: Parameters<typeof fake.to>[0]) => fake.to(phone).filter((p) => p.type === "approval");

/** Waits until the team's hub has taken in the page's visibility message (no barrier on a live socket). */
function untilVisible(member: Member, visible: boolean) {
  const hub = hubStub(member.teamId);
  return vi.waitFor(async () => {
    const now = await runInDurableObject(hub, (h) =>
      (h as unknown as { parts: { feed: LiveFeed } }).parts.feed.isVisible(member.userId),
    );
    if (now !== visible) throw new Error("not yet");
  });
}

async function mails(member: Member) {
  const { messages } = await json<{ messages: Array<{ subject: string; text: string; link: string }> }>(
    await outbox(member.email),
  );
  return messages.filter((m) => m.subject.includes("waiting for your answer"));
}

async function detail(member: Member, id: string) {
  return json<ApprovalDetail>(await api(`/v1/approvals/${id}`, { cookie: member.cookie }));
}

describe("the escalation ladder", () => {
  it("climbs for elicitations and high-risk requests too: repeats keep the generic title and the risk mark", async () => {
    const owner = await signUp();
    const phone = await fake.addPhone(owner, "Pixel 8");
    const question = await ask(owner, "elicitation/create", (sessionId) => ({
      sessionId,
      mode: "form",
      message: "Which port should the secret service use?",
      requestedSchema: { type: "object", properties: { port: { type: "integer" } } },
    }));
    const risky = await ask(owner, "session/request_permission", (sessionId) =>
      permissionParams(sessionId, {
        toolCall: { toolCallId: unique("call"), title: "Wipe", kind: "execute", rawInput: { command: "rm -rf /srv" } },
      }),
    );
    await fake.untilPushes(2);
    await question.at(60_000);
    await risky.at(60_000);
    const pushesOf = (id: string) => approvalsTo(phone).filter((p) => p.approvalId === id);
    const asked = pushesOf(question.approval.id);
    expect(asked).toHaveLength(2);
    for (const p of asked) {
      expect(p).toMatchObject({ title: "An agent is asking you a question" });
      expect(p).not.toHaveProperty("risk");
    }
    expect(JSON.stringify(asked)).not.toContain("secret service");
    // The declarative notification (Safari, iOS 18.4+) says no more than the lock screen may.
    for (const p of asked) expect(p.notification).toMatchObject({ title: "An agent is asking you a question" });
    // A repeat is as urgent as the first push, lives no longer than the request has left, and
    // replaces it at the push service (one Topic per request).
    const sent = fake.pushes.filter((p) => p.payload.approvalId === risky.approval.id);
    expect(sent.map((p) => p.headers.get("Urgency"))).toEqual(["high", "high"]);
    expect(new Set(sent.map((p) => p.headers.get("Topic"))).size).toBe(1);
    const left = Math.ceil((risky.approval.expiresAt - risky.approval.createdAt) / 1000);
    for (const p of sent) {
      expect(Number(p.headers.get("TTL"))).toBeGreaterThan(0);
      expect(Number(p.headers.get("TTL"))).toBeLessThanOrEqual(left);
    }
    // `risk: "high"`: the service worker offers no lock-screen action, on the repeat as on the first.
    expect(pushesOf(risky.approval.id).map((p) => [p.title, p.risk])).toEqual([
      ["Wipe", "high"],
      ["Wipe", "high"],
    ]);
    // The agent that asked the question hears where it stands, as a permission's agent does.
    const progress = await question.agent.nextProgress((p) => Array.isArray(p.deliveredTo) && p.deliveredTo.length > 0);
    expect(progress).toMatchObject({ requestId: 1, approvalId: question.approval.id });
  });

  it("walks the default ladder once: owner, owner again at 60 s, every approver at 3 min, mail at 5 min", async () => {
    const owner = await signUp();
    const bea = await addMember(owner, "approver", "Bea");
    const ownerPhone = await fake.addPhone(owner, "Pixel 8");
    const beaPhone = await fake.addPhone(bea, "iPhone");
    const { approval, at, sessionId } = await ask(owner);
    await fake.untilPushes(1);
    expect(approvalsTo(ownerPhone)).toHaveLength(1);

    await at(59_999);
    expect(approvalsTo(ownerPhone)).toHaveLength(1);
    await at(60_000);
    await at(60_000); // an alarm that runs twice repeats nothing
    expect(approvalsTo(ownerPhone)).toHaveLength(2);
    expect(approvalsTo(beaPhone)).toHaveLength(0);

    await at(180_000);
    expect(approvalsTo(beaPhone)).toEqual([expect.objectContaining({ approvalId: approval.id })]);
    expect(approvalsTo(ownerPhone)).toHaveLength(2);
    expect(await mails(owner)).toHaveLength(0);

    await at(300_000);
    await at(400_000);
    const mailed = await mails(owner);
    expect(mailed).toHaveLength(1);
    // A link that opens the card; never a decision link, never the tool's arguments.
    expect(mailed[0]?.link).toMatch(new RegExp(`/approvals/${approval.id}$`));
    expect(mailed[0]?.text).not.toContain("rm -rf");
    expect(await mails(bea)).toHaveLength(0);
    expect(fake.pushes).toHaveLength(3);

    // Every step is on the card's timeline and in the audit chain.
    const { escalations } = await detail(owner, approval.id);
    expect(escalations?.map((e) => [e.step, e.via, e.to.sort(), e.reached])).toEqual([
      [0, "push", ["Ada"], 1],
      [1, "push", ["Ada"], 1],
      [2, "push", ["Ada", "Bea"], 1],
      [3, "email", ["Ada"], 1],
    ]);
    await flush(owner.teamId, sessionId);
    const { entries } = await json<{ entries: Array<{ action: string; subject: string; detail: { step: number } }> }>(
      await api("/v1/audit", { cookie: owner.cookie }),
    );
    const steps = entries.filter((e) => e.action === "approval.escalated" && e.subject === approval.id);
    expect(steps.map((e) => e.detail.step).sort()).toEqual([0, 1, 2, 3]);
  });

  it("stops the moment a device showed the request", async () => {
    const owner = await signUp();
    const phone = await fake.addPhone(owner);
    const { agent, approval, at } = await ask(owner);
    await fake.untilPushes(1);
    const shown = await api(`/v1/approvals/${approval.id}/receipt`, {
      method: "POST",
      cookie: owner.cookie,
      body: JSON.stringify({ deviceId: phone.deviceId, event: "displayed" }),
    });
    expect(shown.status).toBe(204);
    // The gate hears it from the hub, and tells the agent.
    await agent.nextProgress((p) => (p.seenBy as unknown[]).length > 0);
    await at(600_000 - 1);
    expect(approvalsTo(phone)).toHaveLength(1);
    expect(await mails(owner)).toHaveLength(0);
    const { delivery } = await detail(owner, approval.id);
    expect(delivery[0]).toMatchObject({ displayedAt: expect.any(Number), seenAt: expect.any(Number) });
  });

  it("stops on a decision, and never fires for a resolved request", async () => {
    const owner = await signUp();
    const phone = await fake.addPhone(owner);
    const { agent, approval, at } = await ask(owner);
    await fake.untilPushes(1);
    expect((await decide(owner, approval, "deny")).status).toBe(200);
    await agent.next();
    await fake.untilPushes(2); // the notification closes
    await at(60_000);
    await at(600_000 - 1);
    expect(fake.to(phone).map((p) => p.type)).toEqual(["approval", "resolved"]);
    expect(await mails(owner)).toHaveLength(0);
    expect((await detail(owner, approval.id)).escalations).toHaveLength(1);
  });

  it("tells the agent who is looking when a teammate claims the request", async () => {
    const owner = await signUp("Ada");
    await fake.addPhone(owner);
    const { agent, approval } = await ask(owner);
    await fake.untilPushes(1);
    const claimed = await api(`/v1/approvals/${approval.id}/claim`, {
      method: "POST",
      cookie: owner.cookie,
      body: "{}",
    });
    expect(claimed.status).toBe(200);
    const progress = await agent.nextProgress((p) => p.claimedBy !== undefined);
    expect(progress).toMatchObject({ approvalId: approval.id, claimedBy: { name: "Ada", at: expect.any(Number) } });
  });

  it("when the owner has no device, climbs at once, in one call to the hub, to the first step that reaches someone", async () => {
    const calls = spyOnEscalate();
    const owner = await signUp();
    const bea = await addMember(owner, "approver", "Bea");
    const beaPhone = await fake.addPhone(bea, "iPhone");
    const { agent, approval } = await ask(owner); // the owner has no device
    // Without moving time: step 0 (owner) and step 1 (owner again) reach nobody, step 2 reaches Bea.
    await fake.untilPushes(1);
    expect(approvalsTo(beaPhone)).toEqual([expect.objectContaining({ approvalId: approval.id })]);
    const escalated = await agent.nextProgress((p) => p.escalatedTo !== undefined);
    expect(escalated.escalatedTo).toMatchObject({ via: "push" });
    expect((escalated.escalatedTo as { names: string[] }).names.sort()).toEqual(["Ada", "Bea"]);
    expect(escalated.unreachable).toBeUndefined();
    const { escalations } = await detail(owner, approval.id);
    expect(escalations?.map((e) => [e.step, e.reached])).toEqual([
      [0, 0],
      [1, 0],
      [2, 1],
    ]);
    expect(calls.filter((o) => o.approval.id === approval.id).map((o) => o.step)).toEqual([0]);
  });

  it("when nobody's device can be reached, says so at once and mails the owner, each step audited", async () => {
    const owner = await signUp();
    const { agent, approval, sessionId } = await ask(owner); // nobody in the team has a device
    const first = await agent.nextProgress(() => true);
    expect(first).toMatchObject({ requestId: 1, approvalId: approval.id, unreachable: true, deliveredTo: [] });
    const { escalations } = await detail(owner, approval.id);
    expect(escalations?.map((e) => [e.step, e.via, e.reached])).toEqual([
      [0, "push", 0],
      [1, "push", 0],
      [2, "push", 0],
      [3, "email", 1],
    ]);
    expect(await mails(owner)).toHaveLength(1);
    await flush(owner.teamId, sessionId);
    const { entries } = await json<{ entries: Array<{ action: string; subject: string; detail: { step: number } }> }>(
      await api("/v1/audit?limit=500", { cookie: owner.cookie }),
    );
    const escalated = entries.filter((e) => e.action === "approval.escalated" && e.subject === approval.id);
    const steps = escalated.map((e) => e.detail.step);
    expect(steps.sort()).toEqual([0, 1, 2, 3]);
  });

  it("tells the gate only what changed: steps that reach nobody do not send the same receipts again", async () => {
    const told: string[] = [];
    const original = SessionGate.prototype.deliveryChanged;
    vi.spyOn(SessionGate.prototype, "deliveryChanged").mockImplementation(function (this: SessionGate, ...args) {
      told.push(JSON.stringify(args[2]));
      return original.apply(this, args);
    });
    const owner = await signUp();
    const bea = await addMember(owner, "approver", "Bea");
    await fake.addPhone(bea, "iPhone");
    const { agent } = await ask(owner); // the owner has no device: steps 0 and 1 reach nobody
    await agent.nextProgress((p) => p.escalatedTo !== undefined);
    expect(told.length).toBeGreaterThan(0);
    const repeats = told.filter((receipts, i) => i > 0 && receipts === told[i - 1]);
    expect(repeats).toEqual([]);
  });

  it("a gate told the receipts it already has writes nothing", async () => {
    const owner = await signUp();
    const { sessionId, approval } = await ask(owner);
    const receipts = { deliveredTo: [], seenBy: [{ userId: owner.userId, name: "Ada", at: approval.createdAt + 5 }] };
    const saves = await runInDurableObject(gateStub(owner.teamId, sessionId), async (gate) => {
      const ladders = (gate as unknown as { escalation: { host: { ladders: LadderStore } } }).escalation.host.ladders;
      const save = vi.spyOn(ladders, "save");
      await gate.deliveryChanged(owner.teamId, approval.id, receipts);
      await gate.deliveryChanged(owner.teamId, approval.id, receipts);
      return save.mock.calls.length;
    });
    expect(saves).toBe(1);
  });

  it("a visible page gets the card instead of a push; unseen after 20 s, the phone is pushed; seen, the ladder stops", async () => {
    const owner = await signUp();
    const phone = await fake.addPhone(owner);
    const page = await openLive(owner);
    page.ws.send(JSON.stringify({ type: "visibility", visible: true }));
    await untilVisible(owner, true);
    const { agent, approval, at } = await ask(owner);
    const shownLive = await agent.nextProgress((p) => (p.deliveredTo as unknown[]).length > 0);
    expect(shownLive.deliveredTo).toEqual([expect.objectContaining({ name: "Ada", device: "app" })]);
    expect(fake.pushes).toHaveLength(0);
    await at(19_999);
    expect(fake.pushes).toHaveLength(0);
    await at(20_000);
    expect(approvalsTo(phone)).toHaveLength(1);
    // The page shows the card while visible: seen, and nothing more happens.
    page.ws.send(JSON.stringify({ type: "seen", approvalIds: [approval.id] }));
    await agent.nextProgress((p) => (p.seenBy as unknown[]).length > 0);
    await at(600_000 - 1);
    expect(approvalsTo(phone)).toHaveLength(1);
    expect(await mails(owner)).toHaveLength(0);
    const { escalations } = await detail(owner, approval.id);
    expect(escalations?.map((e) => [e.step, e.phase, e.shownLive])).toEqual([
      [0, "step", ["Ada"]],
      [0, "presence", []],
    ]);
    page.ws.close();
  });

  it("a hidden page is no presence: the push goes out", async () => {
    const owner = await signUp();
    const phone = await fake.addPhone(owner);
    const page = await openLive(owner);
    page.ws.send(JSON.stringify({ type: "visibility", visible: true }));
    await untilVisible(owner, true);
    page.ws.send(JSON.stringify({ type: "visibility", visible: false })); // visibilitychange: hidden
    await untilVisible(owner, false);
    await ask(owner);
    await fake.untilPushes(1);
    expect(approvalsTo(phone)).toHaveLength(1);
    page.ws.close();
  });
});

describe("a climb in the team's hub", () => {
  /** Step 1 pushes Bea (no device: nobody reached), its climb mails the owner. */
  const climbToMail = (owner: Member, bea: Member, approval: Approval): EscalationOrder => ({
    approval,
    ownerUserId: owner.userId,
    step: 1,
    phase: "step",
    to: [bea.userId],
    via: "push",
    lockScreen: "tool_title",
    deciders: "any_approver",
    climb: [{ step: 2, to: "session_owner", via: "email" }],
  });
  /** A request whose first step reached the owner's phone: the rest of its ladder waits. */
  async function waiting() {
    const owner = await signUp();
    await fake.addPhone(owner);
    const bea = await addMember(owner, "approver", "Bea");
    const asked = await ask(owner);
    await fake.untilPushes(1);
    return { owner, bea, ...asked };
  }

  /** The climb to the mail, asked for now: it must reach nobody and mail nobody. */
  async function expectNothingClimbed({ owner, bea, approval }: Awaited<ReturnType<typeof waiting>>) {
    const outcome = await runInDurableObject(hubStub(owner.teamId), (hub) =>
      hub.escalate(owner.teamId, climbToMail(owner, bea, approval)),
    );
    expect(outcome).toEqual({ reached: 0, to: [], held: false });
    expect(await mails(owner)).toEqual([]);
  }

  it("runs nothing for a request it knows resolved, and climbs no further", async () => {
    const asked = await waiting();
    expect((await decide(asked.owner, asked.approval, "deny")).status).toBe(200);
    await flush(asked.owner.teamId, asked.sessionId);
    await expectNothingClimbed(asked);
  });

  it("climbs no further once someone whose seeing counts has seen the request", async () => {
    const asked = await waiting();
    const { owner, approval } = asked;
    await runInDurableObject(hubStub(owner.teamId), (hub) => {
      (hub as unknown as { parts: { escalations: Escalations } }).parts.escalations.seenLive(
        owner.userId,
        [approval.id],
        Date.now(),
      );
    });
    await expectNothingClimbed(asked);
  });

  it("climbs while nobody is reached, and runs a step asked for again while it runs once", async () => {
    const { owner, bea, approval } = await waiting();
    const order = climbToMail(owner, bea, approval);
    const [a, b] = await runInDurableObject(hubStub(owner.teamId), (hub) =>
      Promise.all([hub.escalate(owner.teamId, order), hub.escalate(owner.teamId, order)]),
    );
    expect(a).toEqual(b);
    expect(a.climbed).toEqual([{ step: 2, outcome: expect.objectContaining({ reached: 1 }) }]);
    expect(await mails(owner)).toHaveLength(1);
  });

  it("shows the card once for a whole climb, with every step on its timeline", async () => {
    const { owner, bea, approval } = await waiting();
    const feed = await openLive(owner);
    const cards = () => feed.frames.filter((f) => f.type === "approval" && (f.approval as Approval).id === approval.id);
    const before = cards().length;
    await runInDurableObject(hubStub(owner.teamId), (hub) =>
      hub.escalate(owner.teamId, climbToMail(owner, bea, approval)),
    );
    const steps = (f: Record<string, unknown>) =>
      (f.approval as { escalations: { step: number }[] }).escalations.map((e) => e.step);
    const shown = await feed.next((f) => f.type === "approval" && steps(f).includes(2));
    expect(steps(shown)).toEqual(expect.arrayContaining([1, 2]));
    // The hub sends frames in order: a marker sent after the climb's card arrives after it.
    await runInDurableObject(hubStub(owner.teamId), (hub) => {
      (hub as unknown as { parts: { feed: LiveFeed } }).parts.feed.send({ type: "hello" } as never);
    });
    await feed.next((f) => f.type === "hello");
    expect(cards().length - before).toBe(1);
    feed.ws.close();
  });
});

describe("the ladder in the team policy", () => {
  it("takes a ladder naming the team's members, and refuses strangers, unsorted steps and too many, naming the field", async () => {
    const owner = await signUp();
    const bea = await addMember(owner, "approver", "Bea");
    const stranger = await signUp("Eve");
    const put = (escalation: unknown) =>
      api("/v1/policy", { method: "PUT", cookie: owner.cookie, body: JSON.stringify({ escalation }) });
    const ok = await put([
      { afterMs: 0, to: "session_owner", via: "push" },
      { afterMs: 30_000, to: [bea.userId], via: "email" },
    ]);
    expect(ok.status).toBe(200);
    expect((await json<{ escalation: unknown[] }>(ok)).escalation).toHaveLength(2);
    const foreign = await put([{ afterMs: 0, to: [bea.userId, stranger.userId], via: "push" }]);
    expect(foreign.status).toBe(400);
    expect(await json(foreign)).toMatchObject({
      error: "invalid_request",
      message: expect.stringContaining("escalation[0].to[1]"),
    });
    const unsorted = await put([
      { afterMs: 5_000, to: "session_owner", via: "push" },
      { afterMs: 0, to: "all_approvers", via: "push" },
    ]);
    expect(unsorted.status).toBe(400);
    expect(JSON.stringify(await json(unsorted))).toContain("escalation");
    const many = Array.from({ length: 9 }, (_, i) => ({ afterMs: i * 1000, to: "session_owner", via: "push" }));
    expect((await put(many)).status).toBe(400);
  });
});

describe("device health", () => {
  it("flags a device whose pushes keep failing", async () => {
    const owner = await signUp();
    const phone = await fake.addPhone(owner);
    fake.state.answer = () => 400; // the push service refuses: the delivery fails
    for (let i = 0; i < 3; i++) await ask(owner);
    await fake.untilPushes(3);
    await vi.waitFor(async () => {
      const { devices } = await json<{ devices: Array<{ id: string; health: string }> }>(
        await api("/v1/devices", { cookie: owner.cookie }),
      );
      expect(devices.find((d) => d.id === phone.deviceId)?.health).toBe("failing");
    });
  });
});
