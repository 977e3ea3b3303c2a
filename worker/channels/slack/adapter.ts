/**
 * Slack as a channel of the escalation ladder (`via: "slack"`): where a step's cards go (the team
 * channel an admin picked, else each linked member's DM with the bot), posting a card
 * (`chat.postMessage`) and, once the request ended, updating it (`chat.update`: "Allowed by Ada
 * on Slack", "Expired").
 *
 * Owns: the Slack `ChannelAdapter`. Does not own: when to post or update, retries (the hub's post
 * queue), the message's shape (`blocks.ts`), the HTTP calls (`web-api.ts`).
 */
import { getChannelInstall, listChannelLinks } from "../../db/channels";
import type { Env } from "../../types";
import { type ChannelAdapter, type ChannelCard, ChannelFailure, type ChannelTarget } from "../channel";
import { channelConfigured } from "../settings";
import { slackCardMessage, slackEndedMessage } from "./blocks";
import { slackBotToken } from "./inbound";
import { postMessage, updateMessage } from "./web-api";

/** The team's bot token; no install (removed since) fails the post for good. */
async function tokenOf(env: Env, teamId: string): Promise<string> {
  const install = await getChannelInstall(env.DB, teamId, "slack");
  if (!install) throw new ChannelFailure(false, "slack: not installed for this team");
  return slackBotToken(env, install);
}

/** A post's reference: the channel and the message's `ts`, which `chat.update` needs. */
const refOf = (channel: string, ts: string) => `${channel}/${ts}`;

export const slackAdapter: ChannelAdapter = {
  channel: "slack",
  configured: (env) => channelConfigured(env, "slack"),

  async targets(env, teamId, userIds): Promise<ChannelTarget[]> {
    const install = await getChannelInstall(env.DB, teamId, "slack");
    if (!install) return [];
    if (install.target) return [{ address: install.target }];
    const links = await listChannelLinks(env.DB, teamId, "slack", userIds);
    return links.map((l) => ({ userId: l.userId, address: l.address }));
  },

  async post(env, target, card: ChannelCard) {
    const posted = await postMessage(env, await tokenOf(env, card.teamId), target.address, slackCardMessage(card));
    return { ref: refOf(posted.channel, posted.ts) };
  },

  async end(env, _target, ref, card, ending) {
    const [channel, ts] = ref.split("/");
    if (!channel || !ts) throw new ChannelFailure(false, "slack: a post reference of another shape");
    await updateMessage(env, await tokenOf(env, card.teamId), channel, ts, slackEndedMessage(card, ending));
  },
};
