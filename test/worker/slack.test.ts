/**
 * Slack, end to end in workerd with real D1, against the fake Slack on 127.0.0.1
 * (test/fakes/slack.ts): the signature check, "Add to Slack" (OAuth v2, the token sealed), the
 * URL check, linking by DM, taps deciding through the team's rules, and the ladder's cards.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { SLACK_ACTIONS } from "../../sdk/src/human/slack";
import { ChannelFailure } from "../../worker/channels/channel";
import { CHANNEL_SETTINGS } from "../../worker/channels/settings";
import { HIGH_RISK_LINE } from "../../worker/channels/slack/blocks";
import { LINKED_TEXT, OTHER_TEAM_TEXT, slackBotToken, UNKNOWN_CODE_TEXT } from "../../worker/channels/slack/inbound";
import { SLACK_SCOPES } from "../../worker/channels/slack/oauth";
import { postMessage } from "../../worker/channels/slack/web-api";
import { getChannelInstall } from "../../worker/db/channels";
import app from "../../worker/index";
import { NEEDS_PASSKEY } from "../../worker/team/channel-decision";
import type { Env as WorkerEnv } from "../../worker/types";
import type { FakeSlackCall } from "../fakes/slack";
import {
  api,
  connectAgent,
  createKey,
  gateStub,
  hubStub,
  json,
  type Member,
  ORIGIN,
  pendingApprovals,
  permissionParams,
  settled,
  signUp,
  unique,
} from "./helpers";
import {
  addToSlack,
  directMessage,
  failNext,
  fromSlack,
  linkSlackUser,
  newWorkspace,
  slackCalls,
  tap,
  untilSlackCalls,
} from "./slack-helpers";
import { addMember, putPolicyConfirmed, withPasskey } from "./team-helpers";

/** The team's audit entries as `[action, subject]`, newest first. */
async function auditActions(member: Member): Promise<[string, string][]> {
  const { entries } = await json<{ entries: { action: string; subject: string }[] }>(
    await api("/v1/audit", { cookie: member.cookie }),
  );
  return entries.map((e) => [e.action, e.subject]);
}

const urlCheck = JSON.stringify({
  type: "url_verification",
  token: "legacy",
  challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
});

describe("Slack's signature", () => {
  it("answers the URL check when signed, and 401 bad_signature when the signature is wrong, old, or missing", async () => {
    const good = await fromSlack("/v1/channels/slack/events", urlCheck);
    expect(good.status).toBe(200);
    expect(await json(good)).toEqual({ challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" });

    const sixMinutesAgo = String(Math.floor(Date.now() / 1000) - 6 * 60);
    const refused = [
      await fromSlack("/v1/channels/slack/events", urlCheck, { secret: "not the signing secret" }),
      await fromSlack("/v1/channels/slack/events", urlCheck, { timestamp: sixMinutesAgo }),
      await fromSlack("/v1/channels/slack/events", urlCheck, { signature: null }),
      await fromSlack("/v1/channels/slack/events", urlCheck, { timestamp: null }),
      await fromSlack("/v1/channels/slack/interactions", "payload=%7B%7D", { secret: "not the signing secret" }),
      await fromSlack("/v1/channels/slack/interactions", "payload=%7B%7D", { signature: null }),
    ];
    for (const response of refused) {
      expect(response.status).toBe(401);
      expect((await json(response)).error).toBe("bad_signature");
    }
  });

  it("signs the raw body: the same JSON re-spaced is refused", async () => {
    const timestamp = String(Math.floor(Date.now() / 1000));
    const { slackSignature } = await import("../../worker/channels/slack/signature");
    const signature = slackSignature(env.SLACK_SIGNING_SECRET ?? "", timestamp, urlCheck);
    const respaced = JSON.stringify(JSON.parse(urlCheck), null, 1);
    const response = await fromSlack("/v1/channels/slack/events", respaced, { timestamp, signature });
    expect(response.status).toBe(401);
  });
});

describe("a deployment without Slack's settings", () => {
  it("answers 404 on every Slack endpoint", async () => {
    const owner = await signUp();
    const unset = {
      ...env,
      ...Object.fromEntries(CHANNEL_SETTINGS.slack.map((n) => [n, undefined])),
    } as unknown as WorkerEnv;
    const paths: Array<[string, string]> = [
      ["GET", "/v1/channels/slack/install"],
      ["GET", "/v1/channels/slack/oauth/callback?code=x&state=y"],
      ["POST", "/v1/channels/slack/events"],
      ["POST", "/v1/channels/slack/interactions"],
      ["PUT", "/v1/channels/slack/target"],
    ];
    for (const [method, path] of paths) {
      const response = await app.request(
        `${ORIGIN}${path}`,
        { method, headers: { Cookie: owner.cookie, Origin: ORIGIN, "CF-Connecting-IP": "10.9.9.9" } },
        unset,
      );
      expect(response.status, path).toBe(404);
      expect((await json(response)).error).toBe("not_found");
    }
  });
});

describe("Add to Slack", () => {
  it("sends an owner to Slack's authorize page with the scopes and a state, and stores the bot token sealed", async () => {
    const owner = await signUp();
    const { workspace, authorize, done } = await addToSlack(owner);
    expect(authorize.pathname).toBe("/oauth/v2/authorize");
    expect(authorize.searchParams.get("scope")).toBe(SLACK_SCOPES.join(","));
    expect(authorize.searchParams.get("redirect_uri")).toBe(`${ORIGIN}/v1/channels/slack/oauth/callback`);
    expect(done.status).toBe(302);
    expect(done.headers.get("Location")).toBe(`${ORIGIN}/channels?slack=installed`);

    const install = await getChannelInstall(env.DB, owner.teamId, "slack");
    expect(install?.externalId).toBe(workspace);
    const raw = await env.DB.prepare("SELECT * FROM channel_installs WHERE team_id = ?").bind(owner.teamId).first();
    expect(JSON.stringify(raw)).not.toContain("xoxb-");
    expect(await auditActions(owner)).toContainEqual(["channel.connected", "slack"]);
  });

  it("refuses a state that was tampered with, or made for someone else; nothing is installed", async () => {
    const owner = await signUp();
    const admin = await addMember(owner, "admin");
    const start = await api("/v1/channels/slack/install", { cookie: owner.cookie, redirect: "manual" });
    const state = new URL(start.headers.get("Location") ?? "").searchParams.get("state") ?? "";
    const [payload, mac] = state.split(".");
    const forged = `${Buffer.from(JSON.stringify({ t: owner.teamId, u: admin.userId, e: Date.now() + 60_000, n: "x" })).toString("base64url")}.${mac}`;
    const attempts = [
      { cookie: owner.cookie, state: `${payload}.${"0".repeat(64)}` },
      { cookie: owner.cookie, state: forged },
      { cookie: admin.cookie, state }, // the owner's state, brought back by another admin
      { cookie: owner.cookie, state: "" },
    ];
    for (const { cookie, state: s } of attempts) {
      const response = await api(`/v1/channels/slack/oauth/callback?code=anything&state=${encodeURIComponent(s)}`, {
        cookie,
        redirect: "manual",
      });
      expect(response.status).toBe(400);
      expect((await json(response)).error).toBe("invalid_oauth_state");
    }
    expect(await getChannelInstall(env.DB, owner.teamId, "slack")).toBeNull();
  });

  it("is for owners and admins only", async () => {
    const owner = await signUp();
    const approver = await addMember(owner, "approver");
    const response = await api("/v1/channels/slack/install", { cookie: approver.cookie, redirect: "manual" });
    expect(response.status).toBe(403);
  });
});

describe("linking a Slack user", () => {
  it("links the sender of a one-time code by DM, and says so; a wrong code links nothing", async () => {
    const owner = await signUp();
    const { workspace } = await addToSlack(owner);
    const { slackUser, dm } = await linkSlackUser(owner, workspace);
    const [reply] = await untilSlackCalls(workspace, "chat.postMessage");
    expect(reply?.body).toMatchObject({ channel: dm, text: LINKED_TEXT("Ada") });
    const row = await env.DB.prepare("SELECT address FROM channel_links WHERE team_id = ? AND external_user_id = ?")
      .bind(owner.teamId, slackUser)
      .first<{ address: string }>();
    expect(row?.address).toBe(dm);

    await fromSlack("/v1/channels/slack/events", directMessage(workspace, "UOTHER1", "DOTHER1", "ABCD-EFGH-JKMN"));
    const replies = await untilSlackCalls(workspace, "chat.postMessage", 2);
    expect(replies[1]?.body).toMatchObject({ channel: "DOTHER1", text: UNKNOWN_CODE_TEXT });
    const other = await env.DB.prepare("SELECT 1 FROM channel_links WHERE external_user_id = 'UOTHER1'").first();
    expect(other).toBeNull();
  });

  it("refuses a code of another team: the workspace's taps are its own team's", async () => {
    const owner = await signUp();
    const { workspace } = await addToSlack(owner);
    const other = await signUp("Bo");
    const started = await api("/v1/channels/slack/link", { method: "POST", cookie: other.cookie });
    const { code } = await json<{ code: string }>(started);
    await fromSlack("/v1/channels/slack/events", directMessage(workspace, "UCROSS1", "DCROSS1", code));
    const [reply] = await untilSlackCalls(workspace, "chat.postMessage");
    expect(reply?.body).toMatchObject({ channel: "DCROSS1", text: OTHER_TEAM_TEXT });
    const links = await env.DB.prepare("SELECT team_id FROM channel_links WHERE external_user_id = 'UCROSS1'").all();
    expect(links.results).toEqual([]);
  });

  it.each([
    ["app_uninstalled", { type: "app_uninstalled" }],
    ["tokens_revoked for the bot", { type: "tokens_revoked", tokens: { bot: ["UBOT1"] } }],
  ])("removes the install when Slack says %s, audited; a user's token revoked removes nothing", async (_, event) => {
    const owner = await signUp();
    const { workspace } = await addToSlack(owner);
    const userTokens = { type: "tokens_revoked", tokens: { oauth: ["U1"] } };
    await fromSlack(
      "/v1/channels/slack/events",
      JSON.stringify({ type: "event_callback", team_id: workspace, event: userTokens }),
    );
    expect(await getChannelInstall(env.DB, owner.teamId, "slack")).not.toBeNull();
    const response = await fromSlack(
      "/v1/channels/slack/events",
      JSON.stringify({ type: "event_callback", team_id: workspace, event }),
    );
    expect(response.status).toBe(200);
    expect(await getChannelInstall(env.DB, owner.teamId, "slack")).toBeNull();
    const { entries } = await json<{ entries: { action: string; actor: string; subject: string }[] }>(
      await api("/v1/audit", { cookie: owner.cookie }),
    );
    expect(entries).toContainEqual(
      expect.objectContaining({ action: "channel.removed", actor: "system", subject: "slack" }),
    );
  });

  it("ignores a workspace nobody added", async () => {
    const workspace = newWorkspace();
    const response = await fromSlack(
      "/v1/channels/slack/events",
      directMessage(workspace, "U1", "D1", "ABCD-EFGH-JKMN"),
    );
    expect(response.status).toBe(200);
    expect(await slackCalls(workspace)).toEqual([]);
  });
});

/** Owner Ada with Slack added, her Slack user linked, and a ladder that posts to Slack at once. */
async function slackTeam() {
  const owner = await signUp();
  const { workspace } = await addToSlack(owner);
  const { slackUser, dm } = await linkSlackUser(owner, workspace);
  const escalation = [{ afterMs: 0, to: "session_owner", via: "slack" }];
  expect((await putPolicyConfirmed(await withPasskey(owner), { escalation })).status).toBe(200);
  return { owner, workspace, slackUser, dm };
}

/** The agent asks; the ladder's first step runs (as the gate's alarm would); the card Slack got. */
async function askAndPost(team: Awaited<ReturnType<typeof slackTeam>>, toolCall?: object) {
  const { key } = await createKey(team.owner);
  const sessionId = unique("sess");
  const agent = await connectAgent(key, sessionId);
  await agent.ask(1, permissionParams(sessionId, toolCall ? { toolCall: toolCall as never } : {}));
  const [approval] = await pendingApprovals(team.owner, sessionId);
  if (!approval) throw new Error("not pending");
  await runInDurableObject(gateStub(team.owner.teamId, sessionId), (gate) => gate.escalateDue(approval.createdAt));
  const posts = await untilSlackCalls(team.workspace, "chat.postMessage", 2); // the link's reply, then the card
  const card = posts.find((p) => p.body.blocks !== undefined);
  if (!card) throw new Error("no card posted");
  return { agent, sessionId, approval, card };
}

type Button = { action_id: string; value?: string };
const buttonsOf = (card: FakeSlackCall) =>
  ((card.body.blocks as Array<{ type: string; elements?: Button[] }>).find((b) => b.type === "actions")?.elements ??
    []) as Button[];

describe("cards and taps", { timeout: 15_000 }, () => {
  it("a ladder step via slack posts the lock-screen text and no arguments; Allow once decides it, end to end", async () => {
    const team = await slackTeam();
    const { agent, approval, card } = await askAndPost(team, {
      toolCallId: unique("call"),
      title: "rm -r build",
      kind: "execute",
      rawInput: { command: "rm -r build", token: "ARGUMENT-MARKER-7f3a" },
    });
    expect(card.token).toMatch(/^xoxb-/);
    expect(card.body.channel).toBe(team.dm);
    expect(JSON.stringify(card.body)).toContain("rm -r build");
    expect(JSON.stringify(card.body)).not.toContain("ARGUMENT-MARKER-7f3a");
    const allow = buttonsOf(card).find((b) => b.action_id === SLACK_ACTIONS.allowOnce);
    expect(JSON.parse(allow?.value ?? "{}")).toEqual({ approvalId: approval.id, requestHash: approval.requestHash });

    const response = await fromSlack(
      "/v1/channels/slack/interactions",
      tap(team.workspace, team.slackUser, team.dm, "allowOnce", JSON.parse(allow?.value ?? "{}")),
    );
    expect(response.status).toBe(200);
    const answer = await agent.next<{ id: number; result: { outcome: { outcome: string; optionId: string } } }>();
    expect(answer.result.outcome).toEqual({ outcome: "selected", optionId: "allow" });
    const decided = await settled(team.owner, approval.id);
    expect(decided.decidedBy).toMatchObject({ userId: team.owner.userId, via: "slack" });

    const [ephemeral] = await untilSlackCalls(team.workspace, "chat.postEphemeral");
    expect(ephemeral?.body).toMatchObject({ channel: team.dm, user: team.slackUser });
    await runDurableObjectAlarm(hubStub(team.owner.teamId));
    const [update] = await untilSlackCalls(team.workspace, "chat.update");
    expect(update?.body).toMatchObject({ channel: team.dm });
    expect(JSON.stringify(update?.body.blocks)).toContain("Allowed by Ada on Slack");
    expect(buttonsOf(update as FakeSlackCall).map((b) => b.action_id)).toEqual([SLACK_ACTIONS.open]);
  });

  it("with a team channel picked by an admin, the card goes there instead of the DM", async () => {
    const team = await slackTeam();
    const approver = await addMember(team.owner, "approver");
    const pick = (cookie: string, channelId: string | null) =>
      api("/v1/channels/slack/target", { method: "PUT", cookie, body: JSON.stringify({ channelId }) });
    expect((await pick(approver.cookie, "C0123456789")).status).toBe(403);
    expect((await pick(team.owner.cookie, "not a channel")).status).toBe(400);
    const picked = await pick(team.owner.cookie, "C0123456789");
    expect(picked.status).toBe(200);
    expect(await json(picked)).toEqual({ channelId: "C0123456789" });
    const { card } = await askAndPost(team);
    expect(card.body.channel).toBe("C0123456789");
    expect(await auditActions(team.owner)).toContainEqual(["channel.target_changed", "slack"]);
  });

  it("a tap by an unlinked Slack user decides nothing and says why, to them alone", async () => {
    const team = await slackTeam();
    const { approval, card } = await askAndPost(team);
    const allow = buttonsOf(card).find((b) => b.action_id === SLACK_ACTIONS.allowOnce);
    const stranger = "USTRANGER1";
    await fromSlack(
      "/v1/channels/slack/interactions",
      tap(team.workspace, stranger, team.dm, "allowOnce", JSON.parse(allow?.value ?? "{}")),
    );
    const [ephemeral] = await untilSlackCalls(team.workspace, "chat.postEphemeral");
    expect(ephemeral?.body).toMatchObject({ user: stranger });
    expect(String(ephemeral?.body.text)).toMatch(/link/i);
    expect((await pendingApprovals(team.owner, approval.sessionId)).map((a) => a.id)).toEqual([approval.id]);
  });

  it("a high-risk request's card has no Allow button, and a forged allow is refused: needs the passkey", async () => {
    const team = await slackTeam();
    const { approval, card } = await askAndPost(team, {
      toolCallId: unique("call"),
      title: "git push --force origin main",
      kind: "execute",
      rawInput: { command: "git push --force origin main" },
    });
    expect(buttonsOf(card).map((b) => b.action_id)).toEqual([SLACK_ACTIONS.deny, SLACK_ACTIONS.open]);
    expect(JSON.stringify(card.body.blocks)).toContain(HIGH_RISK_LINE);
    await fromSlack(
      "/v1/channels/slack/interactions",
      tap(team.workspace, team.slackUser, team.dm, "allowOnce", {
        approvalId: approval.id,
        requestHash: approval.requestHash,
      }),
    );
    const [ephemeral] = await untilSlackCalls(team.workspace, "chat.postEphemeral");
    expect(ephemeral?.body.text).toBe(NEEDS_PASSKEY);
    expect((await pendingApprovals(team.owner, approval.sessionId)).map((a) => a.id)).toEqual([approval.id]);
  });
});

describe("the Web API client", () => {
  it("classifies Slack's errors: ratelimited and outages retryable, a missing channel or bad token final", async () => {
    const owner = await signUp();
    const { workspace } = await addToSlack(owner);
    const install = await getChannelInstall(env.DB, owner.teamId, "slack");
    if (!install) throw new Error("not installed");
    const token = await slackBotToken(env as unknown as WorkerEnv, install);
    const post = () => postMessage(env as unknown as WorkerEnv, token, "C0123456789", { text: "hi" });
    const failure = (promise: Promise<unknown>) =>
      promise.then(
        () => null,
        (err: unknown) => err,
      );

    expect((await post()).channel).toBe("C0123456789");
    for (const [error, retryable] of [
      ["ratelimited", true],
      ["service_unavailable", true],
      ["channel_not_found", false],
      ["invalid_auth", false],
      ["not_in_channel", false],
    ] as const) {
      await failNext(workspace, "chat.postMessage", error);
      const err = await failure(post());
      expect(err, error).toBeInstanceOf(ChannelFailure);
      expect((err as ChannelFailure).retryable, error).toBe(retryable);
    }
    const badToken = await failure(
      postMessage(env as unknown as WorkerEnv, "xoxb-forged", "C0123456789", { text: "x" }),
    );
    expect((badToken as ChannelFailure).retryable).toBe(false);
    expect(await slackCalls(workspace, "chat.postMessage")).toHaveLength(6);
  });
});
