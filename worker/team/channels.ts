/**
 * A team's outside channels as the Channels screen and the policy see them: which are set up on
 * this deployment and connected for the team, whether the caller linked their account, removing
 * an install, linking and unlinking a member, and the policy's check that every channel its
 * ladder uses can reach anyone.
 *
 * Owns: what "connected" means per channel, and the audit of removing, linking and unlinking.
 * Does not own: connecting (each platform's install: `channels/pagerduty/install.ts`, Slack's
 * OAuth), link codes (`channel-links.ts`), the SQL (`db/channels.ts`).
 */
import {
  CHANNELS,
  type Channel,
  type ChannelLinkCode,
  type ChannelStatus,
  LINKABLE_CHANNELS,
} from "../../sdk/src/human/channels";
import type { EscalationStep } from "../../sdk/src/human/policy";
import { channelAdapter } from "../channels/registry";
import { channelConfigured, missingChannelSettings, requireChannel } from "../channels/settings";
import { deleteChannelInstall, deleteChannelLink, getChannelInstall, getChannelLink, listChannelInstalls } from "../db";
import { DomainError } from "../errors";
import type { Env } from "../types";
import { appendAudit } from "./audit";
import { auditEvents, userActor } from "./audit-events";
import { startChannelLink } from "./channel-links";

export interface ChannelCaller {
  teamId: string;
  userId: string;
}

/** Telegram is one bot per deployment: set up is connected. The others need the team's install. */
function connected(env: Env, channel: Channel, installed: boolean): boolean {
  return channelConfigured(env, channel) && (installed || channel === "telegram");
}

export async function channelConnected(env: Env, teamId: string, channel: Channel): Promise<boolean> {
  if (!channelConfigured(env, channel)) return false;
  return connected(env, channel, channel === "telegram" || (await getChannelInstall(env.DB, teamId, channel)) !== null);
}

export async function listChannels(env: Env, who: ChannelCaller): Promise<ChannelStatus[]> {
  const installs = await listChannelInstalls(env.DB, who.teamId);
  return Promise.all(
    CHANNELS.map(async (channel) => {
      const install = installs.find((i) => i.channel === channel);
      const linked = isLinkable(channel) && (await getChannelLink(env.DB, who.teamId, who.userId, channel)) !== null;
      return {
        channel,
        setUp: channelConfigured(env, channel),
        missing: missingChannelSettings(env, channel),
        connected: connected(env, channel, install !== undefined),
        ...(install?.target ? { target: install.target } : {}),
        linked,
      };
    }),
  );
}

/** Removes the team's install: its posts stop (each later post or update finds none and ends). */
export async function removeChannel(env: Env, who: ChannelCaller, channel: Channel): Promise<void> {
  requireChannel(env, channel);
  if (!(await deleteChannelInstall(env.DB, who.teamId, channel))) return;
  await appendAudit(env, auditEvents.channelRemoved(context(who), channel));
}

export async function linkChannel(env: Env, who: ChannelCaller, channel: Channel): Promise<ChannelLinkCode> {
  requireLinkable(env, channel);
  const link = await startChannelLink(env, who, channel);
  const url = await channelAdapter(channel)?.linkUrl?.(env, link.code);
  return url ? { ...link, url } : link;
}

export async function unlinkChannel(env: Env, who: ChannelCaller, channel: Channel): Promise<void> {
  requireLinkable(env, channel);
  if (!(await deleteChannelLink(env.DB, who.teamId, who.userId, channel))) return;
  await appendAudit(env, auditEvents.channelUnlinked(context(who), { channel, userId: who.userId }));
}

/** A ladder reaches people only through channels set up here and connected for the team (400 naming the step). */
export async function assertLadderChannels(env: Env, teamId: string, escalation: EscalationStep[]): Promise<void> {
  for (const [i, step] of escalation.entries()) {
    if (step.via === "push" || step.via === "email") continue;
    if (await channelConnected(env, teamId, step.via)) continue;
    throw new DomainError("channel_not_set_up", `escalation[${i}].via: ${step.via} is not set up or not connected`, {
      extra: { issues: [{ code: "custom", path: ["escalation", i, "via"], message: "not set up or not connected" }] },
    });
  }
}

const isLinkable = (channel: Channel) => (LINKABLE_CHANNELS as readonly Channel[]).includes(channel);

/** Only Slack and Telegram link accounts; PagerDuty has no link routes (404 as an unknown path). */
function requireLinkable(env: Env, channel: Channel): void {
  requireChannel(env, channel);
  if (!isLinkable(channel)) throw new DomainError("not_found", `${channel} has no account links`);
}

const context = (who: ChannelCaller) => ({ teamId: who.teamId, actor: userActor(who.userId), at: Date.now() });
