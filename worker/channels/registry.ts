/**
 * Which adapter drives each channel: one line per platform. The hub's post queue and the
 * routes ask here; a channel without an adapter yet reaches nobody (its ladder steps climb on).
 *
 * Owns: the map. Does not own: any adapter (`slack/`, `telegram/`, `pagerduty/` beside this file).
 */
import type { Channel, ChannelAdapter } from "./channel";
import { pagerDutyAdapter } from "./pagerduty/adapter";
import { slackAdapter } from "./slack/adapter";
import { telegramAdapter } from "./telegram/adapter";

const ADAPTERS: Partial<Record<Channel, ChannelAdapter>> = {
  pagerduty: pagerDutyAdapter,
  slack: slackAdapter,
  telegram: telegramAdapter,
};

export function channelAdapter(channel: Channel): ChannelAdapter | undefined {
  return ADAPTERS[channel];
}
