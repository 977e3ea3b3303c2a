/**
 * PagerDuty as a ladder step, end to end in workerd with real D1: the fake Events API v2 on
 * 127.0.0.1 (test/fakes/pagerduty.mjs) checks each event as the real one does. Retries run from
 * the hub's alarm (`runDurableObjectAlarm`), after moving the post's due time into the past, as
 * if its backoff had passed; nothing sleeps.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { ApprovalDetail } from "../../sdk/src/approval";
import { PUSHES_PER_WINDOW } from "../../worker/hub/push-budget";
import {
  api,
  connectAgent,
  createKey,
  decide,
  hubStub,
  json,
  type Member,
  outbox,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import { putPolicyConfirmed, withPasskey } from "./team-helpers";

interface FakeEvent {
  status: number;
  body: Record<string, unknown> & { dedup_key?: string; event_action?: string };
}

/** A PagerDuty service on the fake whose next events are answered `answers` first, connected for the team. */
async function connectPagerDuty(owner: Member, answers: number[] = []) {
  const routingKey = `${unique("rk").replace(/[^A-Za-z0-9]/g, "")}${"0".repeat(32)}`.slice(0, 32);
  await fetch(`${env.FAKE_PAGERDUTY_URL}/_fake/keys`, {
    method: "POST",
    body: JSON.stringify({ routingKey, answers }),
  });
  const put = await api("/v1/channels/pagerduty", {
    method: "PUT",
    cookie: owner.cookie,
    body: JSON.stringify({ routingKey }),
  });
  expect(put.status).toBe(200);
  const events = async () =>
    (
      await json<{ events: FakeEvent[] }>(
        await fetch(`${env.FAKE_PAGERDUTY_URL}/_fake/events?routingKey=${routingKey}`),
      )
    ).events;
  return { routingKey, events };
}

/** PagerDuty at once, then mail the owner after an hour (reached at once only by a climb). */
async function pageThenMail(owner: Member) {
  const escalation = [
    { afterMs: 0, to: "session_owner", via: "pagerduty" },
    { afterMs: 3_600_000, to: "session_owner", via: "email" },
  ];
  expect((await putPolicyConfirmed(await withPasskey(owner), { escalation })).status).toBe(200);
}

/** One request whose tool input carries an argument no channel may show. */
async function ask(owner: Member) {
  const { key } = await createKey(owner);
  const sessionId = unique("sess");
  const agent = await connectAgent(key, sessionId);
  const toolCall = {
    toolCallId: unique("call"),
    title: "Clean the build folder",
    kind: "execute" as const,
    rawInput: { command: "rm -r build --token=ARGUMENT-SECRET" },
  };
  await agent.ask(1, permissionParams(sessionId, { toolCall }));
  const [approval] = await pendingApprovals(owner, sessionId);
  if (!approval) throw new Error("not pending");
  return { agent, sessionId, approval };
}

/** Where the hub's links point (APP_ORIGIN; unset in the tests: the local dev address). */
const APP = env.APP_ORIGIN ?? "http://localhost:8787";

const detail = async (owner: Member, id: string) =>
  json<ApprovalDetail>(await api(`/v1/approvals/${id}`, { cookie: owner.cookie }));

async function escalationMails(owner: Member) {
  const { messages } = await json<{ messages: Array<{ subject: string }> }>(await outbox(owner.email));
  return messages.filter((m) => m.subject.includes("waiting for your answer"));
}

/** The hub's alarm, once the posts' backoff has passed. */
async function alarmAfterBackoff(owner: Member) {
  const hub = hubStub(owner.teamId);
  await runInDurableObject(hub, (_, state) => {
    state.storage.sql.exec("UPDATE channel_posts SET next_at = 0 WHERE next_at IS NOT NULL");
  });
  return runDurableObjectAlarm(hub);
}

describe("a ladder step with via: pagerduty", () => {
  it("triggers one incident per request with the lock-screen text and no arguments, and resolves it when decided in the app", async () => {
    const owner = await signUp();
    const pagerDuty = await connectPagerDuty(owner);
    await pageThenMail(owner);
    const { approval, sessionId } = await ask(owner);

    const [trigger] = await vi.waitFor(async () => {
      const events = await pagerDuty.events();
      if (events.length === 0) throw new Error("no event yet");
      return events;
    });
    expect(trigger?.status).toBe(202);
    expect(trigger?.body).toEqual({
      routing_key: pagerDuty.routingKey,
      event_action: "trigger",
      dedup_key: approval.id,
      payload: {
        summary: "Clean the build folder",
        source: "tapgate",
        severity: "warning",
        custom_details: { session: sessionId, link: `${APP}/approvals/${approval.id}` },
      },
      links: [{ href: `${APP}/approvals/${approval.id}`, text: "Open in Tapgate" }],
    });
    expect(JSON.stringify(trigger)).not.toContain("ARGUMENT-SECRET");

    // Posted: reached, on the timeline; the ladder does not climb to the mail.
    const shown = await vi.waitFor(async () => {
      const d = await detail(owner, approval.id);
      if (!d.escalations?.length) throw new Error("no step yet");
      return d;
    });
    expect(shown.escalations?.[0]).toMatchObject({ step: 0, via: "pagerduty", reached: 1, to: ["PagerDuty"] });
    expect(await escalationMails(owner)).toHaveLength(0);

    expect((await decide(owner, approval, "allow")).status).toBe(200);
    const resolve = await vi.waitFor(async () => {
      const event = (await pagerDuty.events())[1];
      if (!event) throw new Error("no resolve yet");
      return event;
    });
    expect(resolve).toEqual({
      status: 202,
      body: { routing_key: pagerDuty.routingKey, event_action: "resolve", dedup_key: approval.id },
    });
  });

  it("a failure PagerDuty may recover from climbs at once, and the post is retried from the hub's alarm", async () => {
    const owner = await signUp();
    const pagerDuty = await connectPagerDuty(owner, [500]);
    await pageThenMail(owner);
    const { approval } = await ask(owner);

    // The 500 reached nobody: the mail step, an hour away, went at once.
    await vi.waitFor(async () => expect(await escalationMails(owner)).toHaveLength(1));
    expect((await pagerDuty.events()).map((e) => e.status)).toEqual([500]);

    expect(await alarmAfterBackoff(owner)).toBe(true);
    const events = await pagerDuty.events();
    expect(events.map((e) => [e.status, e.body.event_action, e.body.dedup_key])).toEqual([
      [500, "trigger", approval.id],
      [202, "trigger", approval.id],
    ]);
    const d = await detail(owner, approval.id);
    expect(d.escalations?.find((e) => e.step === 0)).toMatchObject({ via: "pagerduty", reached: 1 });
  });

  it("a post still waiting for its retry when the request ends never goes, and nothing is resolved", async () => {
    const owner = await signUp();
    const pagerDuty = await connectPagerDuty(owner, [503]);
    await pageThenMail(owner);
    const { approval } = await ask(owner);
    await vi.waitFor(async () => expect(await escalationMails(owner)).toHaveLength(1));

    expect((await decide(owner, approval, "deny")).status).toBe(200);
    await alarmAfterBackoff(owner);
    expect((await pagerDuty.events()).map((e) => [e.status, e.body.event_action])).toEqual([[503, "trigger"]]);
  });

  it("a refusal climbs at once and is never sent again", async () => {
    const owner = await signUp();
    const pagerDuty = await connectPagerDuty(owner, [400]);
    await pageThenMail(owner);
    await ask(owner);

    await vi.waitFor(async () => expect(await escalationMails(owner)).toHaveLength(1));
    await alarmAfterBackoff(owner);
    expect((await pagerDuty.events()).map((e) => e.status)).toEqual([400]);
  });
});

describe("the push budget", () => {
  it("counts each PagerDuty trigger as a push to that place: past it, nothing is posted and the ladder climbs", async () => {
    const owner = await signUp();
    const pagerDuty = await connectPagerDuty(owner);
    await pageThenMail(owner);
    const { key } = await createKey(owner);
    const sessionId = unique("sess");
    const agent = await connectAgent(key, sessionId);
    for (let i = 1; i <= PUSHES_PER_WINDOW + 1; i++) await agent.ask(i, permissionParams(sessionId));
    const pending = await pendingApprovals(owner, sessionId);
    expect(pending).toHaveLength(PUSHES_PER_WINDOW + 1);

    // The one past the budget reached nobody: its mail step went at once.
    await vi.waitFor(async () => expect(await escalationMails(owner)).toHaveLength(1), { timeout: 10_000 });
    const triggered = new Set((await pagerDuty.events()).map((e) => e.body.dedup_key));
    expect(triggered.size).toBe(PUSHES_PER_WINDOW);
  }, 30_000);
});

describe("a ladder naming a channel", () => {
  it("is refused unless the channel is set up here and connected for the team", async () => {
    const owner = await withPasskey(await signUp());
    const ladder = (via: string) => ({ escalation: [{ afterMs: 0, to: "session_owner", via }] });
    const put = (via: string) =>
      api("/v1/policy", { method: "PUT", cookie: owner.cookie, body: JSON.stringify(ladder(via)) });
    // Telegram is set up in the test deployment, and one bot per deployment is connected once set up.
    expect((await putPolicyConfirmed(owner, ladder("telegram"))).status).toBe(200);
    for (const via of ["pagerduty", "slack"]) {
      const refused = await put(via);
      expect(refused.status).toBe(400);
      expect(await json(refused)).toMatchObject({
        error: "channel_not_set_up",
        issues: [{ path: ["escalation", 0, "via"] }],
      });
    }
    await connectPagerDuty(owner);
    // Known now, a new channel on the ladder is a weakening: the owner's passkey confirms it.
    expect(await json(await put("pagerduty"))).toMatchObject({ error: "step_up_required", weakens: ["escalation"] });
    expect((await putPolicyConfirmed(owner, ladder("pagerduty"))).status).toBe(200);
  });
});
