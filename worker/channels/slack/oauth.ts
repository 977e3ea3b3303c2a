/**
 * "Add to Slack" (OAuth v2): the authorize URL with a `state` bound to the team and the person who
 * started it (HMAC-signed with `CHANNEL_SECRET_KEY`, valid 10 minutes), and the callback's half:
 * the state checked, the code exchanged (`oauth.v2.access`), the bot token sealed (AES-GCM, `install-config.ts`) and
 * stored as the team's Slack install, the workspace id as its `external_id`.
 *
 * Owns: the state and the install's making. Does not own: who may install (the route: owners and
 * admins, signed in), removing an install (`DELETE /v1/channels/slack`), sealing (`install-config.ts`).
 */

import { timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { parseJson } from "../../../sdk/src/protocol";
import { hmacSha256Hex, randomToken } from "../../crypto";
import { putChannelInstall } from "../../db/channels";
import { appendAudit } from "../../team/audit";
import { auditEvents, userActor } from "../../team/audit-events";
import type { Env } from "../../types";
import { ChannelFailure } from "../channel";
import { sealInstallConfig } from "../install-config";
import { slackApiUrl } from "../settings";
import { exchangeOAuthCode } from "./web-api";

/** The bot's scopes: post cards and update them, open a DM, read the DMs members send their link code in. */
export const SLACK_SCOPES = ["chat:write", "im:write", "im:history"] as const;
export const SLACK_STATE_TTL_MS = 10 * 60 * 1000;
export const SLACK_CALLBACK_PATH = "/v1/channels/slack/oauth/callback";

export interface Installer {
  teamId: string;
  userId: string;
}

const stateSchema = z.object({ t: z.string(), u: z.string(), e: z.number(), n: z.string() });

const stateMac = (env: Env, payload: string) =>
  hmacSha256Hex(`slack-oauth-state:${env.CHANNEL_SECRET_KEY ?? ""}`, payload);

/** Slack's authorize page, beside its Web API (`https://slack.com/oauth/v2/authorize` by default). */
function authorizeUrl(env: Env): URL {
  return new URL("/oauth/v2/authorize", slackApiUrl(env));
}

/** Where Slack sends the installer (with a code and the state) once they approved. */
export function slackCallbackUrl(origin: string): string {
  return new URL(SLACK_CALLBACK_PATH, origin).href;
}

/** The URL "Add to Slack" sends an owner or admin to. */
export function slackInstallUrl(env: Env, origin: string, installer: Installer, now: number): string {
  const payload = Buffer.from(
    JSON.stringify({ t: installer.teamId, u: installer.userId, e: now + SLACK_STATE_TTL_MS, n: randomToken() }),
  ).toString("base64url");
  const url = authorizeUrl(env);
  url.searchParams.set("client_id", env.SLACK_CLIENT_ID ?? "");
  url.searchParams.set("scope", SLACK_SCOPES.join(","));
  url.searchParams.set("redirect_uri", slackCallbackUrl(origin));
  url.searchParams.set("state", `${payload}.${stateMac(env, payload)}`);
  return url.href;
}

/** Whether `state` is one this deployment made for this person of this team, not yet expired. */
export function slackStateValid(env: Env, state: string, installer: Installer, now: number): boolean {
  const [payload, mac] = state.split(".");
  if (!payload || !mac || !/^[0-9a-f]{64}$/.test(mac)) return false;
  if (!timingSafeEqual(Buffer.from(stateMac(env, payload), "hex"), Buffer.from(mac, "hex"))) return false;
  const parsed = stateSchema.safeParse(parseJson(Buffer.from(payload, "base64url").toString("utf8")));
  if (!parsed.success) return false;
  const { t, u, e } = parsed.data;
  return t === installer.teamId && u === installer.userId && now < e;
}

/** What a Slack install keeps sealed: the workspace's bot token. */
export const slackConfigSchema = z.object({ botToken: z.string().startsWith("xoxb-") });

/** Exchanges the code and stores the install (the token sealed); resolves with the workspace's name. */
export async function completeSlackInstall(
  env: Env,
  installer: Installer,
  code: string,
  origin: string,
  now: number,
): Promise<{ workspace: string }> {
  const access = await exchangeOAuthCode(env, code, slackCallbackUrl(origin));
  const config = await sealInstallConfig(env, installer.teamId, "slack", { botToken: access.access_token });
  const install = {
    teamId: installer.teamId,
    channel: "slack" as const,
    externalId: access.team.id,
    config,
    target: null,
    createdBy: installer.userId,
    createdAt: now,
  };
  await putChannelInstall(env.DB, install).catch((err: unknown) => {
    // UNIQUE (channel, external_id): the workspace is already another team's.
    if (String(err).includes("UNIQUE")) throw new ChannelFailure(false, "slack: the workspace is another team's");
    throw err;
  });
  const context = { teamId: installer.teamId, actor: userActor(installer.userId), at: now };
  await appendAudit(env, auditEvents.channelConnected(context, { channel: "slack", externalId: access.team.id }));
  return { workspace: access.team.name ?? access.team.id };
}
