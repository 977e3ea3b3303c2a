/**
 * The few Slack Web API methods Tapgate calls (`chat.postMessage`, `chat.update`,
 * `chat.postEphemeral`, `conversations.open`, `oauth.v2.access`), at `SLACK_API_URL` (default
 * `https://slack.com/api`), each bounded by a timeout. A failure is a `ChannelFailure`:
 * retryable for what may pass (a timeout, a network error, HTTP 429/5xx, `ratelimited`, Slack's
 * own outages), final for what will not (`channel_not_found`, `invalid_auth`, `not_in_channel`, …).
 *
 * Owns: the HTTP calls and the classification. Does not own: the token (opened by the caller
 * from the sealed install), what a message shows (`blocks.ts`), retrying (the post queue).
 * Hand-written rather than `slack-edge`: see docs/guides/slack.md ("Why no Slack library").
 */
import type { z } from "zod";
import {
  slackAnswerSchema,
  slackConversationSchema,
  slackMessageRefSchema,
  slackOAuthAccessSchema,
} from "../../../sdk/src/human/slack";
import type { Env } from "../../types";
import { ChannelFailure } from "../channel";
import { slackApiUrl } from "../settings";
import type { SlackMessage } from "./blocks";

/** Within the alarm's budget (`ALARM_BUDGET_MS`), so one slow call never holds the post queue. */
export const SLACK_TIMEOUT_MS = 5_000;

/** Slack's `ok: false` errors that may pass if tried again later; any other is final. */
const RETRYABLE_ERRORS = new Set([
  "ratelimited",
  "rate_limited",
  "service_unavailable",
  "fatal_error",
  "internal_error",
  "request_timeout",
]);

type Body = { json: object } | { form: Record<string, string> };

async function send(env: Env, method: string, body: Body, token?: string): Promise<unknown> {
  const headers = new Headers();
  if (token) headers.set("Authorization", `Bearer ${token}`);
  let payload: string;
  if ("json" in body) {
    headers.set("Content-Type", "application/json; charset=utf-8");
    payload = JSON.stringify(body.json);
  } else {
    headers.set("Content-Type", "application/x-www-form-urlencoded");
    payload = new URLSearchParams(body.form).toString();
  }
  let response: Response;
  try {
    response = await fetch(`${slackApiUrl(env).replace(/\/+$/, "")}/${method}`, {
      method: "POST",
      headers,
      body: payload,
      redirect: "manual", // a redirect is no answer of Slack's: final, below
      signal: AbortSignal.timeout(SLACK_TIMEOUT_MS),
    });
  } catch {
    throw new ChannelFailure(true, `slack ${method}: no answer`); // a timeout or the network
  }
  if (response.status === 429 || response.status >= 500) {
    await response.body?.cancel();
    throw new ChannelFailure(true, `slack ${method}: HTTP ${response.status}`);
  }
  const answer = slackAnswerSchema.safeParse(await response.json().catch(() => null));
  if (!response.ok || !answer.success) throw new ChannelFailure(false, `slack ${method}: HTTP ${response.status}`);
  if (!answer.data.ok) {
    const error = answer.data.error ?? "unknown_error";
    throw new ChannelFailure(RETRYABLE_ERRORS.has(error), `slack ${method}: ${error}`);
  }
  return answer.data;
}

async function call<T extends z.ZodType>(
  env: Env,
  method: string,
  schema: T,
  body: Body,
  token?: string,
): Promise<z.infer<T>> {
  const parsed = schema.safeParse(await send(env, method, body, token));
  if (!parsed.success) throw new ChannelFailure(false, `slack ${method}: an answer of another shape`);
  return parsed.data;
}

/** Posts a message; resolves with where it is (`channel`, `ts`), which `chat.update` needs. */
export function postMessage(env: Env, token: string, channel: string, message: SlackMessage) {
  return call(env, "chat.postMessage", slackMessageRefSchema, { json: { channel, ...message } }, token);
}

/** Replaces a message Tapgate posted. */
export function updateMessage(env: Env, token: string, channel: string, ts: string, message: SlackMessage) {
  return call(env, "chat.update", slackMessageRefSchema, { json: { channel, ts, ...message } }, token);
}

/** A message only `user` sees, in `channel` (the answer to their tap). */
export async function postEphemeral(env: Env, token: string, channel: string, user: string, text: string) {
  await send(env, "chat.postEphemeral", { json: { channel, user, text } }, token);
}

/** The DM channel between the bot and `user` (the address a linked member's cards go to). */
export async function openDirectMessage(env: Env, token: string, user: string): Promise<string> {
  return (await call(env, "conversations.open", slackConversationSchema, { json: { users: user } }, token)).channel.id;
}

/** Exchanges an OAuth v2 code for the workspace's bot token (the client's id and secret as a form). */
export function exchangeOAuthCode(env: Env, code: string, redirectUri: string) {
  return call(env, "oauth.v2.access", slackOAuthAccessSchema, {
    form: {
      client_id: env.SLACK_CLIENT_ID ?? "",
      client_secret: env.SLACK_CLIENT_SECRET ?? "",
      code,
      redirect_uri: redirectUri,
    },
  });
}
