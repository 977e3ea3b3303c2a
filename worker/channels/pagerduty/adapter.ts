/**
 * PagerDuty as a channel (Events API v2): a ladder step with `via: "pagerduty"` triggers one
 * incident per request on the team's service (`dedup_key` = the approval id, the lock-screen text
 * as summary, a link to the card), and resolves it with the same key when the request ends.
 * PagerDuty only pages: nobody decides from it.
 *
 * Owns: the event bodies and what each answer means (202 ok; 429, 5xx and timeouts retryable;
 * any other answer final). Does not own: the routing key's storage (`install.ts`, sealed), the
 * post queue and its retries (`worker/hub/channel-posts.ts`).
 */
import { getChannelInstall } from "../../db";
import { ALARM_BUDGET_MS } from "../../deadline";
import type { Env } from "../../types";
import { type ChannelAdapter, type ChannelCard, ChannelFailure, type ChannelTarget } from "../channel";
import { openInstallConfig } from "../install-config";
import { channelConfigured, pagerDutyEventsUrl } from "../settings";

/** The Events API's limit on `payload.summary`. */
const SUMMARY_LIMIT = 1024;

export interface PagerDutyConfig {
  routingKey: string;
}

export const pagerDutyAdapter: ChannelAdapter = {
  channel: "pagerduty",
  configured: (env) => channelConfigured(env, "pagerduty"),
  async targets(env, teamId) {
    const install = await getChannelInstall(env.DB, teamId, "pagerduty");
    return install ? [{ address: "routing-key" }] : [];
  },
  async post(env, _target, card) {
    await sendEvent(env, card.teamId, {
      event_action: "trigger",
      dedup_key: card.approvalId,
      payload: {
        summary: card.text.slice(0, SUMMARY_LIMIT),
        source: "tapgate",
        severity: card.highRisk ? "critical" : "warning",
        custom_details: { session: card.sessionId, link: card.link },
      },
      links: [{ href: card.link, text: "Open in Tapgate" }],
    });
    return { ref: card.approvalId };
  },
  async end(env, _target: ChannelTarget, ref: string, card: ChannelCard) {
    await sendEvent(env, card.teamId, { event_action: "resolve", dedup_key: ref });
  },
};

async function sendEvent(env: Env, teamId: string, event: Record<string, unknown>): Promise<void> {
  const install = await getChannelInstall(env.DB, teamId, "pagerduty");
  // Removed since the post was queued: nothing to page, and nothing will be.
  if (!install) throw new ChannelFailure(false, "PagerDuty is no longer connected");
  const { routingKey } = await openInstallConfig<PagerDutyConfig>(env, install);
  let response: Response;
  try {
    response = await fetch(pagerDutyEventsUrl(env), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ routing_key: routingKey, ...event }),
      redirect: "manual",
      signal: AbortSignal.timeout(ALARM_BUDGET_MS),
    });
  } catch (error) {
    throw new ChannelFailure(true, `PagerDuty did not answer: ${(error as Error).name}`);
  }
  await response.body?.cancel();
  if (response.status === 202) return;
  const retryable = response.status === 429 || response.status >= 500;
  throw new ChannelFailure(retryable, `PagerDuty answered ${response.status}`);
}
