/**
 * Slack's side of the Slack tests: requests signed as Slack signs them, "Add to Slack" through the
 * fake Slack's OAuth page (test/fakes/slack.ts, on 127.0.0.1), a member's link by DM, and what the
 * fake Slack was sent.
 */
import { env } from "cloudflare:test";
import { expect, vi } from "vitest";
import type { SlackButtonValue } from "../../sdk/src/human/slack";
import { SLACK_ACTIONS } from "../../sdk/src/human/slack";
import { slackSignature } from "../../worker/channels/slack/signature";
import type { FakeSlackCall } from "../fakes/slack";
import { api, json, type Member, ORIGIN, unique } from "./helpers";

const fakeSlack = () => (env.SLACK_API_URL ?? "").replace(/\/api$/, "");

/** A fresh workspace id, as Slack's `T…`. */
export const newWorkspace = () =>
  `T${unique("w")
    .replace(/[^A-Za-z0-9]/g, "")
    .toUpperCase()}`;

/** POSTs `body` to a Slack endpoint of ours, signed as Slack would (or as `signed` says). */
export function fromSlack(
  path: "/v1/channels/slack/events" | "/v1/channels/slack/interactions",
  body: string,
  signed: { timestamp?: string | null; signature?: string | null; secret?: string } = {},
) {
  const timestamp = signed.timestamp === undefined ? String(Math.floor(Date.now() / 1000)) : signed.timestamp;
  const headers = new Headers({
    "Content-Type": path.endsWith("events") ? "application/json" : "application/x-www-form-urlencoded",
  });
  if (timestamp !== null) headers.set("X-Slack-Request-Timestamp", timestamp);
  const signature =
    signed.signature === undefined
      ? slackSignature(signed.secret ?? env.SLACK_SIGNING_SECRET ?? "", timestamp ?? "", body)
      : signed.signature;
  if (signature !== null) headers.set("X-Slack-Signature", signature);
  return api(path, { method: "POST", body, headers });
}

/** What the fake Slack was sent with the workspace's bot token (every `xoxb-<workspace>-…`). */
export async function slackCalls(workspace: string, method?: string): Promise<FakeSlackCall[]> {
  const response = await fetch(`${fakeSlack()}/_fake/calls?workspace=${workspace}`);
  const { calls } = await json<{ calls: FakeSlackCall[] }>(response);
  return method ? calls.filter((c) => c.method === method) : calls;
}

/** Waits for the fake Slack to have been sent `count` calls of `method` for the workspace. */
export function untilSlackCalls(workspace: string, method: string, count = 1) {
  return vi.waitFor(
    async () => {
      const calls = await slackCalls(workspace, method);
      if (calls.length < count) throw new Error(`${calls.length} ${method} so far`);
      return calls;
    },
    { timeout: 5_000, interval: 20 },
  );
}

/** The workspace's next call of `method` fails with Slack's `error`. */
export async function failNext(workspace: string, method: string, error: string) {
  await fetch(`${fakeSlack()}/_fake/fail`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ workspace, method, error }),
  });
}

/** "Add to Slack" by `member`, through to the callback; answers the callback's response. */
export async function addToSlack(member: Member, workspace = newWorkspace()) {
  const start = await api("/v1/channels/slack/install", { cookie: member.cookie, redirect: "manual" });
  expect(start.status).toBe(302);
  const authorize = new URL(start.headers.get("Location") ?? "");
  authorize.searchParams.set("team", workspace); // the workspace the installer picks on Slack's page
  const approved = await fetch(authorize, { redirect: "manual" });
  const callback = new URL(approved.headers.get("Location") ?? "");
  expect(callback.origin).toBe(ORIGIN);
  const done = await api(`${callback.pathname}${callback.search}`, { cookie: member.cookie, redirect: "manual" });
  return { workspace, authorize, callback, done };
}

/** A Slack user of the workspace links to `member`: a code from the app, sent to the bot by DM. */
export async function linkSlackUser(
  member: Member,
  workspace: string,
  slackUser = `U${unique("u")
    .replace(/[^A-Za-z0-9]/g, "")
    .toUpperCase()}`,
) {
  const started = await api("/v1/channels/slack/link", { method: "POST", cookie: member.cookie });
  expect(started.status).toBe(201);
  const { code } = await json<{ code: string }>(started);
  const dm = `D${slackUser.slice(1)}`;
  const response = await fromSlack(
    "/v1/channels/slack/events",
    directMessage(workspace, slackUser, dm, `here: ${code}`),
  );
  expect(response.status).toBe(200);
  return { slackUser, dm, code };
}

/** An Events API `message.im` envelope. */
export function directMessage(workspace: string, user: string, channel: string, text: string): string {
  return JSON.stringify({
    type: "event_callback",
    team_id: workspace,
    event: { type: "message", channel_type: "im", channel, user, text, ts: "1.2" },
  });
}

/** An Interactivity `block_actions` request: `user` tapped a card's button. */
export function tap(
  workspace: string,
  user: string,
  channel: string,
  action: keyof typeof SLACK_ACTIONS,
  value: SlackButtonValue,
): string {
  const payload = {
    type: "block_actions",
    team: { id: workspace, domain: "acme" },
    user: { id: user, team_id: workspace },
    channel: { id: channel },
    container: { type: "message", message_ts: "1.2", channel_id: channel },
    response_url: "https://hooks.slack.com/actions/T/1/x",
    actions: [
      { type: "button", action_id: SLACK_ACTIONS[action], block_id: "tapgate_decide", value: JSON.stringify(value) },
    ],
  };
  return new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
}
