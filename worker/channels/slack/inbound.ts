/**
 * What Slack sends Tapgate, once its signature checked: a direct message to the bot (a member's
 * one-time link code) and a tap on a card's button (`block_actions`). A tap decides only through
 * `decideFromChannel` (a linked member with a deciding role, the `requestHash` that was shown,
 * exactly once, no high-risk allow) and its outcome is told to the tapper alone (ephemeral).
 *
 * Owns: reading the link code and the tap, and the bot's answers to them. Does not own: the
 * signature (`signature.ts`, checked by the route first), the link's rules (`channel-links.ts`),
 * the decision's rules (`channel-decision.ts`), the message's update once decided (the post queue).
 */

import {
  SLACK_ACTIONS,
  type SlackBlockActions,
  slackButtonValueSchema,
  slackDirectMessageSchema,
} from "../../../sdk/src/human/slack";
import { parseJson } from "../../../sdk/src/protocol";
import {
  type ChannelInstallRow,
  channelInstallByExternalId,
  deleteChannelInstall,
  deleteChannelLink,
} from "../../db/channels";
import { REQUEST_BUDGET_MS, withDeadline } from "../../deadline";
import { appendAudit } from "../../team/audit";
import { auditEvents } from "../../team/audit-events";
import { decideFromChannel } from "../../team/channel-decision";
import { completeChannelLink } from "../../team/channel-links";
import type { Env } from "../../types";
import { openInstallConfig } from "../install-config";
import { slackConfigSchema } from "./oauth";
import { postEphemeral, postMessage } from "./web-api";

/** The workspace's bot token, opened from the team's sealed install. */
export async function slackBotToken(env: Env, install: ChannelInstallRow): Promise<string> {
  return slackConfigSchema.parse(await openInstallConfig(env, install)).botToken;
}

/** A link code as the app shows it (12 characters, maybe in groups), anywhere in the message. */
const LINK_CODE = /\b(?:[A-Z0-9]{4}[\s-]?){2}[A-Z0-9]{4}\b/i;

export const LINKED_TEXT = (name: string) =>
  `Linked: your Slack user is now ${name}'s in Tapgate. Requests can come to you here.`;
export const OTHER_TEAM_TEXT =
  "That code is for another Tapgate team than the one this Slack workspace is added to; nothing was linked.";
export const UNKNOWN_CODE_TEXT =
  "That code is unknown, expired or already used. Get a new one in Tapgate (Channels → Slack) and send it here.";

/**
 * A direct message to the bot: a link code completes the sender's link to the member who asked
 * for it in the workspace's team; the bot answers in the same DM. Anything else is left alone.
 */
export async function slackDirectMessage(env: Env, workspaceId: string, event: unknown): Promise<void> {
  const message = slackDirectMessageSchema.safeParse(event);
  if (!message.success || "bot_id" in message.data || "subtype" in message.data) return;
  const install = await channelInstallByExternalId(env.DB, "slack", workspaceId);
  if (!install) return;
  const code = LINK_CODE.exec(message.data.text)?.[0];
  if (!code) return;
  const linked = await completeChannelLink(env, "slack", code, {
    externalUserId: message.data.user,
    address: message.data.channel,
  });
  // Cards and taps of this workspace are its team's: a link into another team would reach nobody.
  const otherTeam = linked !== null && linked.teamId !== install.teamId;
  if (linked && otherTeam) await deleteChannelLink(env.DB, linked.teamId, linked.userId, "slack");
  const text = !linked ? UNKNOWN_CODE_TEXT : otherTeam ? OTHER_TEAM_TEXT : LINKED_TEXT(linked.name);
  await postMessage(env, await slackBotToken(env, install), message.data.channel, { text });
}

/**
 * Slack says the app left the workspace (`app_uninstalled`) or its bot token was revoked
 * (`tokens_revoked` naming a bot): the install is removed as if an admin removed it, so the
 * Channels screen says so and the ladder's Slack steps are refused instead of failing silently.
 * Audited with the actor `system`; the event is signed by Slack, so nobody else can send it.
 */
export async function slackAppRemoved(env: Env, workspaceId: string, event: { type: string }): Promise<boolean> {
  const bots = (event as { tokens?: { bot?: unknown } }).tokens?.bot;
  const removed =
    event.type === "app_uninstalled" || (event.type === "tokens_revoked" && Array.isArray(bots) && bots.length > 0);
  if (!removed) return false;
  const install = await channelInstallByExternalId(env.DB, "slack", workspaceId);
  if (!install || !(await deleteChannelInstall(env.DB, install.teamId, "slack"))) return true;
  const context = { teamId: install.teamId, actor: "system", at: Date.now() };
  await appendAudit(env, auditEvents.channelRemoved(context, "slack"));
  return true;
}

export const NOT_INSTALLED_TEXT = "Tapgate is not set up for this workspace any more; nothing was decided.";

/**
 * A tap on a card's button: decided by the team's rules, the outcome said to the tapper alone.
 * Resolves with that sentence, after the decision (within the request budget, so Slack hears
 * back within its 3 s); the caller sends it.
 */
export async function slackTap(
  env: Env,
  payload: SlackBlockActions,
): Promise<{ install: ChannelInstallRow; text: string } | null> {
  const [action] = payload.actions;
  if (!action || action.action_id === SLACK_ACTIONS.open || !payload.team) return null; // a link button: nothing to do
  const install = await channelInstallByExternalId(env.DB, "slack", payload.team.id);
  if (!install) return null;
  const answer =
    action.action_id === SLACK_ACTIONS.allowOnce
      ? "allow_once"
      : action.action_id === SLACK_ACTIONS.deny
        ? "deny"
        : null;
  const value = slackButtonValueSchema.safeParse(parseJson(action.value ?? ""));
  if (!answer || !value.success) return { install, text: "That button is not one of Tapgate's; nothing was decided." };
  const outcome = await withDeadline(
    decideFromChannel(env, {
      channel: "slack",
      teamId: install.teamId,
      externalUserId: payload.user.id,
      approvalId: value.data.approvalId,
      requestHash: value.data.requestHash,
      answer,
    }),
    REQUEST_BUDGET_MS,
    "decideFromChannel",
  ).catch(() => ({
    ok: false,
    text: "Tapgate did not answer in time; open it in Tapgate to see whether it was decided.",
  }));
  return { install, text: outcome.text };
}

/** Tells the tapper alone (`chat.postEphemeral` in the card's channel). */
export async function tellTapper(env: Env, install: ChannelInstallRow, payload: SlackBlockActions, text: string) {
  if (!payload.channel) return;
  await postEphemeral(env, await slackBotToken(env, install), payload.channel.id, payload.user.id, text);
}
