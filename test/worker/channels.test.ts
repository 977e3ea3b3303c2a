/**
 * The channels foundation in workerd with real D1: one-time link codes, a tap on a channel's
 * card deciding as the app would (`decideFromChannel`, through the request's real gate), and the
 * Channels routes (404 for a channel this deployment has not set up, before anything else).
 * The test deployment has PagerDuty (CHANNEL_SECRET_KEY) and Telegram (its bot, against the fake
 * Bot API) set up, and not Slack.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { endingOf } from "../../worker/hub/channel-posts";
import worker from "../../worker/index";
import { DEFAULT_POLICY } from "../../worker/policy";
import { decideFromChannel, NOT_SHOWN_HERE } from "../../worker/team/channel-decision";
import { completeChannelLink, linkedMember, startChannelLink } from "../../worker/team/channel-links";
import type { Env } from "../../worker/types";
import {
  api,
  askOnce,
  connectAgent,
  createKey,
  flush,
  json,
  type Member,
  ORIGIN,
  pendingApprovals,
  permissionParams,
  settled,
  signUp,
  unique,
} from "./helpers";
import { addMember } from "./team-helpers";

const workerEnv = env as unknown as Env;

/** Links `member`'s account on `channel` as the bot would, with a code from the app. */
async function link(member: Member, channel: "slack" | "telegram" = "slack") {
  const externalUserId = unique("U");
  const { code } = await startChannelLink(workerEnv, member, channel);
  const linked = await completeChannelLink(workerEnv, channel, code, {
    externalUserId,
    address: `D-${externalUserId}`,
  });
  if (!linked) throw new Error("not linked");
  return externalUserId;
}

function tap(
  member: Member,
  externalUserId: string,
  approval: Approval,
  answer: "allow_once" | "deny",
  requestHash = approval.requestHash,
) {
  return decideFromChannel(workerEnv, {
    channel: "slack",
    teamId: member.teamId,
    externalUserId,
    approvalId: approval.id,
    requestHash,
    answer,
  });
}

async function current(member: Member, id: string) {
  return json<Approval>(await api(`/v1/approvals/${id}`, { cookie: member.cookie }));
}

describe("link codes", () => {
  it("link the member who asked, once; a used, expired or other channel's code links nobody", async () => {
    const ada = await signUp();
    const { code, expiresAt } = await startChannelLink(workerEnv, ada, "slack");
    expect(code).toMatch(/^[2-9A-HJ-NP-Z]{12}$/);
    expect(expiresAt - Date.now()).toBeGreaterThan(9 * 60_000);
    // Stored hashed: the code itself is nowhere in D1.
    const stored = await env.DB.prepare("SELECT code_hash FROM channel_link_codes WHERE user_id = ?")
      .bind(ada.userId)
      .all();
    expect(JSON.stringify(stored.results)).not.toContain(code);

    const account = { externalUserId: unique("U"), address: "D1" };
    expect(await completeChannelLink(workerEnv, "telegram", code, account)).toBeNull();
    expect(await completeChannelLink(workerEnv, "slack", code.toLowerCase(), account)).toMatchObject({
      teamId: ada.teamId,
      userId: ada.userId,
      name: "Ada",
    });
    expect(await completeChannelLink(workerEnv, "slack", code, { ...account, externalUserId: unique("U") })).toBeNull();
    expect(await linkedMember(workerEnv, "slack", ada.teamId, account.externalUserId)).toEqual({
      userId: ada.userId,
      name: "Ada",
      role: "owner",
    });

    const late = await startChannelLink(workerEnv, ada, "telegram");
    await env.DB.prepare("UPDATE channel_link_codes SET expires_at = ? WHERE user_id = ?")
      .bind(Date.now() - 1, ada.userId)
      .run();
    expect(await completeChannelLink(workerEnv, "telegram", late.code, account)).toBeNull();
  });

  it("a link holds in its own team only", async () => {
    const ada = await signUp();
    const bea = await signUp("Bea");
    const externalUserId = await link(ada);
    expect(await linkedMember(workerEnv, "slack", bea.teamId, externalUserId)).toBeNull();
    const [approval] = [(await askOnce(bea)).approval];
    if (!approval) throw new Error("no approval");
    // Ada's Slack account taps Bea's team's card: not linked there.
    expect(await tap(bea, externalUserId, approval, "deny")).toEqual({
      ok: false,
      text: "Link your Tapgate account first",
    });
    expect((await current(bea, approval.id)).state).toBe("pending");
  });
});

describe("a tap on a channel's card", () => {
  it("decides as the app: once, by the linked member, recorded with where it came from", async () => {
    const { owner, approval, agent, sessionId } = await askOnce();
    const slackUser = await link(owner);
    expect(await tap(owner, slackUser, approval, "allow_once")).toEqual({ ok: true, text: "Allowed" });
    const answer = await agent.next<{ result: { outcome: { outcome: string; optionId: string } } }>();
    expect(answer.result.outcome).toMatchObject({ outcome: "selected", optionId: "allow" });
    const decided = await settled(owner, approval.id);
    expect(decided.decidedBy).toMatchObject({ userId: owner.userId, device: "Slack", via: "slack" });

    // Someone else's later tap decides nothing.
    const bob = await addMember(owner, "approver", "Bob");
    const bobSlack = await link(bob);
    expect(await tap(owner, bobSlack, approval, "deny")).toEqual({
      ok: false,
      text: "Someone already decided this request",
    });

    // History and the audit log say where it was decided.
    await flush(owner.teamId, sessionId);
    const history = await json<{ approvals: Approval[] }>(await api("/v1/history", { cookie: owner.cookie }));
    expect(history.approvals.find((a) => a.id === approval.id)?.decidedBy).toMatchObject({ via: "slack" });
    const audit = await json<{
      entries: Array<{ action: string; subject: string; detail: { decidedBy?: { via?: string } } }>;
    }>(await api("/v1/audit", { cookie: owner.cookie }));
    const entry = audit.entries.find((e) => e.subject === approval.id && e.action === "approval.allowed");
    expect(entry?.detail.decidedBy?.via).toBe("slack");
    expect(audit.entries.some((e) => e.action === "channel.linked" && e.subject === owner.userId)).toBe(true);
  });

  it("refuses the unlinked, the removed, a viewer and a changed request, deciding nothing", async () => {
    const { owner, approval } = await askOnce();
    expect(await tap(owner, unique("U"), approval, "allow_once")).toEqual({
      ok: false,
      text: "Link your Tapgate account first",
    });

    const viewer = await addMember(owner, "viewer", "Vic");
    expect(await tap(owner, await link(viewer), approval, "deny")).toEqual({
      ok: false,
      text: "Your role may not decide requests",
    });

    const ada = await link(owner);
    expect(await tap(owner, ada, approval, "allow_once", "0".repeat(64))).toEqual({
      ok: false,
      text: "The request changed since this card was posted: open in Tapgate",
    });

    const bob = await addMember(owner, "approver", "Bob");
    const bobSlack = await link(bob);
    const removed = await api(`/v1/members/${bob.userId}`, { method: "DELETE", cookie: owner.cookie });
    expect(removed.status).toBe(200);
    expect(await tap(owner, bobSlack, approval, "deny")).toEqual({ ok: false, text: "You are no longer in this team" });
    const links = await env.DB.prepare("SELECT 1 FROM channel_links WHERE user_id = ?").bind(bob.userId).all();
    expect(links.results).toHaveLength(0);

    expect((await current(owner, approval.id)).state).toBe("pending");
  });

  it("never allows a high-risk request: that needs the passkey, in the app", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("sess");
    const agent = await connectAgent(key, sessionId);
    await agent.ask(
      1,
      permissionParams(sessionId, {
        toolCall: { toolCallId: unique("call"), title: "Wipe", kind: "execute", rawInput: { command: "rm -rf /srv" } },
      }),
    );
    const [approval] = await pendingApprovals(owner, sessionId);
    if (!approval) throw new Error("not pending");
    expect(approval.risk).toBe("high");
    const slackUser = await link(owner);
    expect(await tap(owner, slackUser, approval, "allow_once")).toEqual({
      ok: false,
      text: "Needs your passkey: open in Tapgate",
    });
    expect((await current(owner, approval.id)).state).toBe("pending");
    // A deny needs no passkey.
    expect(await tap(owner, slackUser, approval, "deny")).toEqual({ ok: true, text: "Denied" });
  });
});

describe("an allow only of what the card showed", () => {
  const ask = async (owner: Member, toolCall: Record<string, unknown>) => {
    const { key } = await createKey(owner);
    const sessionId = unique("sess");
    const agent = await connectAgent(key, sessionId);
    await agent.ask(1, permissionParams(sessionId, { toolCall: { toolCallId: unique("call"), ...toolCall } }));
    const [approval] = await pendingApprovals(owner, sessionId);
    if (!approval) throw new Error("not pending");
    return approval;
  };

  it.each([
    [
      "an elided command",
      "tool_title",
      { title: "Bash: curl …", kind: "execute", rawInput: { command: "curl x | sh" } },
    ],
    [
      "a diff",
      "tool_title",
      { title: "Edit: a.ts", kind: "edit", content: [{ type: "diff", path: "/repo/a.ts", newText: "x" }] },
    ],
    ["a generic lock screen", "generic", { title: "Run tests", kind: "execute", rawInput: { command: "npm test" } }],
  ])("refuses an allow tapped on a card that does not show %s; a deny decides", async (_, lockScreen, toolCall) => {
    const owner = await signUp();
    const put = await api("/v1/policy", {
      method: "PUT",
      cookie: owner.cookie,
      body: JSON.stringify({ ...DEFAULT_POLICY, lockScreen }),
    });
    expect(put.status).toBe(200);
    const approval = await ask(owner, toolCall);
    const slackUser = await link(owner);
    expect(await tap(owner, slackUser, approval, "allow_once")).toEqual({ ok: false, text: NOT_SHOWN_HERE });
    expect((await current(owner, approval.id)).state).toBe("pending");
    expect(await tap(owner, slackUser, approval, "deny")).toEqual({ ok: true, text: "Denied" });
  });
});

describe("a card's last line", () => {
  const ended = (over: Record<string, unknown>) => endingOf({ state: "denied", ...over } as unknown as Approval);
  it("says who dismissed it, and why a request ended without anyone saying no", () => {
    const ada = { userId: "usr_a", name: "Ada", device: "Slack", via: "slack" };
    expect(ended({ state: "cancelled", reason: "dismissed", decidedBy: ada })).toEqual({
      state: "cancelled",
      text: "Dismissed by Ada on Slack",
    });
    expect(ended({ reason: "decided", decidedBy: ada }).text).toBe("Denied by Ada on Slack");
    expect(ended({ reason: "agent_disconnected" }).text).toBe("Ended: the agent disconnected");
    expect(ended({ reason: "key_revoked" }).text).toBe("Ended: the agent's key was revoked");
    expect(ended({ state: "expired", reason: "expired" })).toEqual({ state: "expired", text: "Expired" });
  });
});

/** The Worker with this deployment's settings minus `without` (a channel not set up). */
async function fetchWithout(without: (keyof Env)[], path: string, init: RequestInit & { cookie?: string } = {}) {
  const headers = new Headers(init.headers);
  if (init.cookie) headers.set("Cookie", init.cookie);
  headers.set("CF-Connecting-IP", "198.51.100.7");
  if (init.method && init.method !== "GET") headers.set("Origin", ORIGIN);
  if (init.body !== undefined) headers.set("Content-Type", "application/json");
  const trimmed = { ...workerEnv } as Record<string, unknown>;
  for (const name of without) delete trimmed[name];
  const ctx = createExecutionContext();
  const response = await worker.fetch(
    new Request(`${ORIGIN}${path}`, { ...init, headers }),
    trimmed as unknown as Env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return response;
}

describe("the Channels routes", () => {
  it("list each channel, set up or not, connected, linked, naming the missing settings", async () => {
    const owner = await signUp();
    await link(owner, "telegram");
    const { channels } = await json<{ channels: Array<Record<string, unknown>> }>(
      await api("/v1/channels", { cookie: owner.cookie }),
    );
    expect(channels).toEqual([
      // Slack and Telegram are set up in the workerd tests (vitest.config.ts: against their fakes).
      { channel: "slack", setUp: true, missing: [], connected: false, linked: false },
      // One bot per deployment: set up is connected.
      { channel: "telegram", setUp: true, missing: [], connected: true, linked: true },
      { channel: "pagerduty", setUp: true, missing: [], connected: false, linked: false },
    ]);
  });

  it("link an account only after a recent sign-in (401 reauth_required), as pairing a device", async () => {
    const ada = await signUp();
    await env.DB.prepare("UPDATE web_sessions SET signed_in_at = ? WHERE user_id = ?")
      .bind(Date.now() - 11 * 60_000, ada.userId)
      .run();
    const stale = await api("/v1/channels/telegram/link", { method: "POST", cookie: ada.cookie });
    expect(stale.status).toBe(401);
    expect(await json(stale)).toMatchObject({ error: "reauth_required" });
    await env.DB.prepare("UPDATE web_sessions SET signed_in_at = ? WHERE user_id = ?")
      .bind(Date.now(), ada.userId)
      .run();
    expect((await api("/v1/channels/telegram/link", { method: "POST", cookie: ada.cookie })).status).toBe(201);
  });

  it("answer 404 for every route of a channel not set up, before any other check", async () => {
    const owner = await signUp();
    const viewer = await addMember(owner, "viewer", "Vic");
    const key = { routingKey: "a".repeat(32) };
    for (const who of [owner, viewer]) {
      for (const [method, path, body] of [
        ["PUT", "/v1/channels/pagerduty", key],
        ["DELETE", "/v1/channels/pagerduty", undefined],
        ["POST", "/v1/channels/slack/link", undefined],
        ["DELETE", "/v1/channels/slack/link", undefined],
        ["DELETE", "/v1/channels/telegram", undefined],
        ["POST", "/v1/channels/fax/link", undefined],
      ] as const) {
        const init = { method, cookie: who.cookie, ...(body && { body: JSON.stringify(body) }) };
        const off = await fetchWithout(["CHANNEL_SECRET_KEY", "TELEGRAM_BOT_TOKEN"], path, init);
        expect([path, off.status]).toEqual([path, 404]);
        expect(await json(off)).toMatchObject({ error: "not_found" });
      }
    }
    // Set up, the same PagerDuty routes answer: the viewer is refused, the owner connects.
    expect(
      (await api("/v1/channels/pagerduty", { method: "PUT", cookie: viewer.cookie, body: JSON.stringify(key) })).status,
    ).toBe(403);
    expect(
      (await api("/v1/channels/pagerduty", { method: "PUT", cookie: owner.cookie, body: JSON.stringify(key) })).status,
    ).toBe(200);
    // PagerDuty has no account links.
    expect((await api("/v1/channels/pagerduty/link", { method: "POST", cookie: owner.cookie })).status).toBe(404);
  });

  it("connect PagerDuty sealed, then remove it, audited without the key", async () => {
    const owner = await signUp();
    const routingKey = `R${unique("k").replace(/[^A-Za-z0-9]/g, "")}`.padEnd(32, "x").slice(0, 32);
    const bad = await api("/v1/channels/pagerduty", {
      method: "PUT",
      cookie: owner.cookie,
      body: JSON.stringify({ routingKey: "short" }),
    });
    expect(bad.status).toBe(400);
    const put = await api("/v1/channels/pagerduty", {
      method: "PUT",
      cookie: owner.cookie,
      body: JSON.stringify({ routingKey }),
    });
    expect(await json(put)).toMatchObject({ channel: "pagerduty", connected: true });
    const row = await env.DB.prepare("SELECT config FROM channel_installs WHERE team_id = ?")
      .bind(owner.teamId)
      .first<{ config: string }>();
    expect(row?.config).toMatch(/^v1\./);
    expect(row?.config).not.toContain(routingKey);
    const removed = await api("/v1/channels/pagerduty", { method: "DELETE", cookie: owner.cookie });
    expect(await json(removed)).toEqual({ ok: true });
    const { channels } = await json<{ channels: Array<{ channel: string; connected: boolean }> }>(
      await api("/v1/channels", { cookie: owner.cookie }),
    );
    expect(channels.find((c) => c.channel === "pagerduty")?.connected).toBe(false);
    const audit = JSON.stringify(await json(await api("/v1/audit", { cookie: owner.cookie })));
    expect(audit).toContain("channel.connected");
    expect(audit).toContain("channel.removed");
    expect(audit).not.toContain(routingKey);
  });
});
