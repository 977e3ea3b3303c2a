/**
 * Connecting PagerDuty: an owner or admin gives the team's Events API v2 integration key
 * (routing key); it is stored sealed (`install-config.ts`), audited without the key.
 *
 * Owns: the install's config shape for PagerDuty. Does not own: who may connect (the route),
 * removing (`team/channels.ts`), sending events (`adapter.ts`).
 */
import { putChannelInstall } from "../../db";
import { appendAudit } from "../../team/audit";
import { auditEvents, userActor } from "../../team/audit-events";
import type { Env } from "../../types";
import { sealInstallConfig } from "../install-config";
import { requireChannel } from "../settings";
import type { PagerDutyConfig } from "./adapter";

export async function connectPagerDuty(
  env: Env,
  who: { teamId: string; userId: string },
  routingKey: string,
): Promise<void> {
  requireChannel(env, "pagerduty");
  const config: PagerDutyConfig = { routingKey };
  const now = Date.now();
  await putChannelInstall(env.DB, {
    teamId: who.teamId,
    channel: "pagerduty",
    externalId: null,
    config: await sealInstallConfig(env, who.teamId, "pagerduty", config),
    target: null,
    createdBy: who.userId,
    createdAt: now,
  });
  const context = { teamId: who.teamId, actor: userActor(who.userId), at: now };
  await appendAudit(env, auditEvents.channelConnected(context, { channel: "pagerduty", externalId: null }));
}
