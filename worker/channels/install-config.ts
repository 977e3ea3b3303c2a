/**
 * A team's install config (a bot token, a routing key) as stored: JSON sealed with the team and
 * channel as context (`secret-box.ts`), so a row copied to another team or channel does not open.
 *
 * Owns: the context string and the JSON framing. Does not own: each channel's config shape.
 */
import type { Channel } from "../../sdk/src/human/channels";
import type { Env } from "../types";
import { openSecret, sealSecret } from "./secret-box";

const contextOf = (teamId: string, channel: Channel) => `${teamId}:${channel}`;

export function sealInstallConfig(env: Env, teamId: string, channel: Channel, config: object): Promise<string> {
  return sealSecret(env, JSON.stringify(config), contextOf(teamId, channel));
}

export async function openInstallConfig<T>(env: Env, row: { teamId: string; channel: Channel; config: string }) {
  return JSON.parse(await openSecret(env, row.config, contextOf(row.teamId, row.channel))) as T;
}
