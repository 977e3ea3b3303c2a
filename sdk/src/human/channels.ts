/**
 * The outside channels a team can reach people by, as the policy's escalation steps and the
 * Channels screen name them. Shared by the Worker, the PWA and the tests.
 */
import { z } from "zod";

export const CHANNELS = ["slack", "telegram", "pagerduty"] as const;
export const channelSchema = z.enum(CHANNELS);
export type Channel = z.infer<typeof channelSchema>;

/** How an escalation step reaches people: a push, a mail, or an outside channel's post. */
export const ESCALATION_VIAS = ["push", "email", ...CHANNELS] as const;
export const escalationViaSchema = z.enum(ESCALATION_VIAS);
export type EscalationVia = z.infer<typeof escalationViaSchema>;

/** How people read each channel's name ("Allowed by Ada on Slack", "posted to Slack"). */
export const CHANNEL_NAMES: Record<Channel, string> = { slack: "Slack", telegram: "Telegram", pagerduty: "PagerDuty" };

/** The channels a member links their own account on (PagerDuty only pages: nobody decides from it). */
export const LINKABLE_CHANNELS = ["slack", "telegram"] as const satisfies readonly Channel[];

/** One channel as the Channels screen shows it (`GET /v1/channels`). */
export const channelStatusSchema = z.object({
  channel: channelSchema,
  /** This deployment has the channel's settings; when false, `missing` names the ones it lacks. */
  setUp: z.boolean(),
  missing: z.array(z.string()),
  /** The team connected it (Slack: added to a workspace; PagerDuty: a routing key; Telegram: set up). */
  connected: z.boolean(),
  /** Where team-wide posts go (a Slack channel id the admin picked); absent: direct messages. */
  target: z.string().optional(),
  /** The caller linked their account on it. */
  linked: z.boolean(),
});
export type ChannelStatus = z.infer<typeof channelStatusSchema>;

export const channelListSchema = z.object({ channels: z.array(channelStatusSchema) });
export type ChannelList = z.infer<typeof channelListSchema>;

export const channelParamSchema = z.object({ channel: channelSchema });

/** `POST /v1/channels/:channel/link`: the one-time code the member gives the bot, valid 10 minutes. */
export const channelLinkCodeSchema = z.object({
  code: z.string(),
  expiresAt: z.number(),
  /** Telegram: the deep link that hands the code to the bot (`https://t.me/<bot>?start=<code>`). */
  url: z.string().optional(),
});
export type ChannelLinkCode = z.infer<typeof channelLinkCodeSchema>;

/** `PUT /v1/channels/pagerduty`: an Events API v2 integration key (32 characters). */
export const pagerDutyInstallBodySchema = z
  .object({ routingKey: z.string().regex(/^[A-Za-z0-9]{32}$/, "a 32-character Events API v2 integration key") })
  .strict();
export type PagerDutyInstallBody = z.infer<typeof pagerDutyInstallBodySchema>;
