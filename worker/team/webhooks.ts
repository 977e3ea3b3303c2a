/**
 * Webhooks as use cases: make an endpoint (URL rule, event names, the team's bound, its secret
 * sealed, the audit event, one D1 batch), list them with their recent deliveries, rotate a
 * secret, delete one; and the hourly sweep of messages a hub missed. The secret is answered
 * once, at creation or rotation, and never again.
 *
 * Owns: the order of those steps and their answers. Does not own: who may call (the route:
 * owners and admins), the SQL (`db/webhooks.ts`), the URL rule (`webhooks/url.ts`), the seal
 * (`webhooks/secret-box.ts`) or delivery (the hub's `webhooks/deliveries.ts`).
 */
import {
  type CreateWebhookBody,
  isWebhookEvent,
  MAX_WEBHOOKS_PER_TEAM,
  WEBHOOK_EVENTS,
  type Webhook,
  type WebhookSecret,
} from "../../sdk/src/human/webhooks";
import { newId } from "../crypto";
import { deleteWebhook, insertWebhook, listWebhooks, replaceWebhookSecret, teamsWithOverdueWebhooks } from "../db";
import { ALARM_BUDGET_MS, withDeadline } from "../deadline";
import { DomainError } from "../errors";
import { hubFor } from "../hub/api";
import type { Env } from "../types";
import { newWebhookSecret, sealingSource, sealSecret } from "../webhooks/secret-box";
import { webhookUrlProblem } from "../webhooks/url";
import { chainQueued } from "./audit";
import { auditEvents, userActor } from "./audit-events";

export interface WebhookCaller {
  teamId: string;
  userId: string;
  /** The request came from this machine in local mode (`edge.ts` `isLocalRequest`): loopback receivers are allowed. */
  local: boolean;
}

function assertSealable(env: Env): void {
  if (!sealingSource(env))
    throw new DomainError(
      "service_unavailable",
      "this server has no secret to seal webhook secrets with (set CHANNEL_SECRET_KEY)",
    );
}

export async function createWebhook(env: Env, who: WebhookCaller, body: CreateWebhookBody): Promise<WebhookSecret> {
  const unknown = body.events.find((e) => !isWebhookEvent(e));
  if (unknown !== undefined)
    throw new DomainError(
      "webhook_event_unknown",
      `no webhook event "${unknown}"; one of: ${WEBHOOK_EVENTS.join(", ")}`,
    );
  const problem = webhookUrlProblem(body.url, who.local);
  if (problem) throw new DomainError("webhook_url_not_allowed", problem);
  assertSealable(env);
  const id = newId("whk");
  const secret = newWebhookSecret();
  const now = Date.now();
  const made = await insertWebhook(
    env.DB,
    {
      id,
      teamId: who.teamId,
      url: body.url,
      events: body.events,
      sealedSecret: await sealSecret(env, who.teamId, id, secret),
      createdBy: who.userId,
      now,
      maxPerTeam: MAX_WEBHOOKS_PER_TEAM,
    },
    auditEvents.webhookCreated({ teamId: who.teamId, actor: userActor(who.userId), at: now }, { id, ...body }),
  );
  if (!made) throw new DomainError("too_many_webhooks");
  await chainQueued(env, who.teamId);
  return { id, secret };
}

export function listTeamWebhooks(env: Env, teamId: string): Promise<Webhook[]> {
  return listWebhooks(env.DB, teamId);
}

export async function rotateWebhookSecret(env: Env, who: WebhookCaller, id: string): Promise<WebhookSecret> {
  assertSealable(env);
  const secret = newWebhookSecret();
  const now = Date.now();
  const audit = auditEvents.webhookRotated({ teamId: who.teamId, actor: userActor(who.userId), at: now }, id);
  const sealedSecret = await sealSecret(env, who.teamId, id, secret);
  if (!(await replaceWebhookSecret(env.DB, { teamId: who.teamId, id, sealedSecret, now }, audit)))
    throw new DomainError("not_found", "no such webhook");
  await chainQueued(env, who.teamId);
  return { id, secret };
}

export async function removeWebhook(env: Env, who: WebhookCaller, id: string): Promise<{ id: string; deleted: true }> {
  const audit = auditEvents.webhookDeleted({ teamId: who.teamId, actor: userActor(who.userId), at: Date.now() }, id);
  if (!(await deleteWebhook(env.DB, { teamId: who.teamId, id }, audit)))
    throw new DomainError("not_found", "no such webhook");
  await chainQueued(env, who.teamId);
  return { id, deleted: true };
}

/** A message this late was missed by its hub (gone between the batch that queued it and its alarm). */
const OVERDUE_MS = 5 * 60_000;
/** Hubs the hourly sweep wakes per run. */
const SWEPT_TEAMS = 100;

/** The Cron Trigger's sweep: wakes the hub of every team whose webhook messages are overdue. */
export async function sweepWebhooks(env: Env, now: number): Promise<void> {
  for (const teamId of await teamsWithOverdueWebhooks(env.DB, now - OVERDUE_MS, SWEPT_TEAMS)) {
    try {
      await withDeadline(hubFor(env, teamId).webhooksDue(teamId), ALARM_BUDGET_MS, "hub.webhooksDue");
    } catch (error) {
      console.error(`webhooks: sweep could not wake a hub: ${String(error).slice(0, 200)}`);
    }
  }
}
