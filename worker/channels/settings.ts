/**
 * Which outside channels this deployment has set up, from its settings (wrangler vars and
 * secrets, all optional: `npm start` works with none). A channel that is not set up is shown as
 * "not set up" on the Channels screen and every endpoint of it answers 404.
 *
 * Owns: which settings each channel needs, and the platforms' default base URLs. Does not own:
 * what a team connected (`worker/db/channels.ts`), or any platform's API (`slack/`, `telegram/`,
 * `pagerduty/`).
 */
import type { Channel } from "../../sdk/src/human/channels";
import { DomainError } from "../errors";
import type { Env } from "../types";

/** The settings each channel needs, by name: the Channels screen names the missing ones. */
export const CHANNEL_SETTINGS: Record<Channel, readonly (keyof Env)[]> = {
  slack: ["SLACK_CLIENT_ID", "SLACK_CLIENT_SECRET", "SLACK_SIGNING_SECRET", "CHANNEL_SECRET_KEY"],
  telegram: ["TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET"],
  pagerduty: ["CHANNEL_SECRET_KEY"],
};

/** The settings `channel` still needs here (empty when it is set up). */
export function missingChannelSettings(env: Env, channel: Channel): string[] {
  return CHANNEL_SETTINGS[channel].filter((name) => {
    const value = env[name];
    return typeof value !== "string" || value === "";
  });
}

export function channelConfigured(env: Env, channel: Channel): boolean {
  return missingChannelSettings(env, channel).length === 0;
}

/** Every endpoint of a channel that is not set up answers 404, as an unknown path would. */
export function requireChannel(env: Env, channel: Channel): void {
  if (!channelConfigured(env, channel)) throw new DomainError("not_found", `${channel} is not set up here`);
}

/** The platforms' API base URLs: settings, so tests point them at loopback fakes. */
export const slackApiUrl = (env: Env) => env.SLACK_API_URL || "https://slack.com/api";
export const telegramApiUrl = (env: Env) => env.TELEGRAM_API_URL || "https://api.telegram.org";
export const pagerDutyEventsUrl = (env: Env) => env.PAGERDUTY_EVENTS_URL || "https://events.pagerduty.com/v2/enqueue";
