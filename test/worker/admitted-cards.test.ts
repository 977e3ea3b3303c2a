/**
 * Cards shown at admission (`LiveFeed.showAdmitted`): the team's hub puts a request on the live
 * feed as its quotas admit it, while the gate holds it. Real members, agent sockets, D1 and hub.
 */
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { DEFAULT_POLICY, limitsOf } from "../../worker/policy";
import { api, askOnce, connectAgent, decide, hubStub, pendingApprovals, permissionParams, unique } from "./helpers";
import { openLive } from "./team-helpers";

type Frame = Record<string, unknown>;
const cardOf =
  (id: string, type = "approval") =>
  (f: Frame) =>
    f.type === type && (f.approval as Approval | undefined)?.id === id;

describe("cards shown at admission", () => {
  it("a held request is on the feed once, as the agent asked it, until it is decided", async () => {
    // The first request reads the team's directory into its hub: names can be shown without D1.
    const { owner, key } = await askOnce();
    const live = await openLive(owner);
    const sessionId = unique("sess");
    const agent = await connectAgent(key, sessionId);
    await agent.ask(1, permissionParams(sessionId));
    const [approval] = await pendingApprovals(owner, sessionId);
    if (!approval) throw new Error("not held");

    const shown = await live.next(cardOf(approval.id));
    expect(shown.approval).toMatchObject({ state: "pending", requestHash: approval.requestHash });
    expect((await decide(owner, approval, "allow")).status).toBe(200);
    await live.next(cardOf(approval.id, "resolved"));
    // The gate's news that it held the request changed nothing: the card is not sent again (the
    // frames after it show the ladder's steps).
    const unclimbed = live.frames.filter(
      (f) => cardOf(approval.id)(f) && (f.approval as { escalations: unknown[] }).escalations.length === 0,
    );
    expect(unclimbed).toHaveLength(1);
  });

  it("a request admitted and then not held is taken down, and its slot is free", async () => {
    const { owner, keyId, sessionId, approval } = await askOnce();
    const live = await openLive(owner);
    const hub = hubStub(owner.teamId);
    const card: Approval = { ...approval, id: `${approval.id}x` };
    const before = await hub.quotaPending();
    const ask = {
      approvalId: card.id,
      keyId,
      sessionId,
      ownerUserId: owner.userId,
      expiresAt: card.expiresAt,
      limits: limitsOf(DEFAULT_POLICY),
      card,
    };

    expect(await hub.admitRequest(owner.teamId, ask)).toMatchObject({ ok: true, rules: [] });
    const shown = await live.next(cardOf(card.id));
    expect(shown.approval).toMatchObject({ state: "pending", owner: { userId: owner.userId } });
    expect(await hub.quotaPending()).toBe(before + 1);

    await hub.releaseRequest(owner.teamId, card.id);
    await live.next((f) => f.type === "withdrawn" && f.approvalId === card.id);
    expect(await hub.quotaPending()).toBe(before);
    // A repeated release finds nothing pending to take down.
    await hub.releaseRequest(owner.teamId, card.id);
    const other = await hub.admitRequest(owner.teamId, { ...ask, approvalId: `${card.id}y`, card: undefined });
    expect(other).toMatchObject({ ok: true });
    expect(live.frames.filter((f) => f.type === "withdrawn")).toHaveLength(1);
  });

  it("a request a standing rule could allow waits until it is held, so a rule's allow is never shown pending", async () => {
    const { owner, key } = await askOnce();
    const match = { command: "npm test", cwd: "/repo", kind: "execute" };
    const made = await api("/v1/rules", {
      method: "POST",
      cookie: owner.cookie,
      body: JSON.stringify({ scope: "team", match }),
    });
    expect(made.status).toBe(201);
    const live = await openLive(owner);
    const sessionId = unique("sess");
    const agent = await connectAgent(key, sessionId);
    const npmTest = {
      toolCallId: unique("call"),
      title: "Run tests",
      kind: "execute" as const,
      rawInput: { command: "npm test", cwd: "/repo" },
    };
    await agent.ask(1, permissionParams(sessionId, { toolCall: npmTest }));
    expect(await agent.next()).toMatchObject({ id: 1, result: { outcome: { optionId: "allow" } } });
    const ruled = await live.next((f) => f.type === "resolved");
    expect(ruled.approval).toMatchObject({ reason: "rule" });

    // A request no rule matches is still shown, for a human to decide; the rule's never was. (How
    // many frames show it depends on when its ladder climbs, so they are not counted.)
    await agent.ask(2, permissionParams(sessionId));
    const [approval] = await pendingApprovals(owner, sessionId);
    if (!approval) throw new Error("not held");
    await live.next(cardOf(approval.id));
    // This session's cards only: the request `askOnce` left pending elsewhere may be shown again as its ladder climbs.
    const shown = live.frames.flatMap((f) =>
      f.type === "approval" && (f.approval as Approval).sessionId === sessionId ? [(f.approval as Approval).id] : [],
    );
    expect(new Set(shown)).toEqual(new Set([approval.id]));
  });
});
