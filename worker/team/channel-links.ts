/**
 * Linking a member's Slack or Telegram account to their Tapgate membership: a one-time code from
 * the app (10 minutes, stored hashed) that the member hands to the bot, and the lookup every tap
 * on a card starts from (which member is this platform user, with their role as D1 has it now).
 *
 * Owns: the code's shape, lifetime and single use. Does not own: the SQL (`db/channels.ts`),
 * how a platform delivers the code (a slash command, a `/start` deep link: `channels/slack/`,
 * `channels/telegram/`), or who may ask for a code (the route).
 */
import type { Channel } from "../../sdk/src/human/channels";
import type { Role } from "../../sdk/src/human/roles";
import { randomString, sha256Hex } from "../crypto";
import { channelLinkMember, findMember, putChannelLink, putChannelLinkCode, takeChannelLinkCode } from "../db";
import type { Env } from "../types";
import { appendAudit } from "./audit";
import { auditEvents, userActor } from "./audit-events";

export const LINK_CODE_TTL_MS = 10 * 60_000;
/** No 0/O or 1/I/L to misread; 12 characters ≈ 60 bits, for a code that lives 10 minutes and works once. */
const CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ";
const CODE_LENGTH = 12;

/** A code as typed back (any case, spaces or dashes around groups): its canonical form's hash. */
function codeHash(code: string): string {
  return sha256Hex(code.replace(/[\s-]/g, "").toUpperCase());
}

export async function startChannelLink(
  env: Env,
  who: { teamId: string; userId: string },
  channel: Channel,
): Promise<{ code: string; expiresAt: number }> {
  const code = randomString(CODE_ALPHABET, CODE_LENGTH);
  const expiresAt = Date.now() + LINK_CODE_TTL_MS;
  await putChannelLinkCode(env.DB, {
    codeHash: codeHash(code),
    teamId: who.teamId,
    userId: who.userId,
    channel,
    expiresAt,
  });
  return { code, expiresAt };
}

/**
 * Spends a code for `channel` and links the platform account to the member who asked for it.
 * Unknown, already used, expired, or its member gone since: null, and nothing is linked.
 */
export async function completeChannelLink(
  env: Env,
  channel: Channel,
  code: string,
  account: { externalUserId: string; address: string },
): Promise<{ teamId: string; userId: string; name: string } | null> {
  const taken = await takeChannelLinkCode(env.DB, channel, codeHash(code));
  if (!taken || taken.expiresAt <= Date.now()) return null;
  const member = await findMember(env.DB, taken.teamId, taken.userId);
  if (!member) return null;
  const now = Date.now();
  await putChannelLink(env.DB, {
    teamId: taken.teamId,
    userId: taken.userId,
    channel,
    externalUserId: account.externalUserId,
    address: account.address,
    linkedAt: now,
  });
  const context = { teamId: taken.teamId, actor: userActor(taken.userId), at: now };
  await appendAudit(
    env,
    auditEvents.channelLinked(context, { channel, userId: taken.userId, externalUserId: account.externalUserId }),
  );
  return { teamId: taken.teamId, userId: taken.userId, name: member.name };
}

/** The member a platform user is linked to in this team, with their role now; removed or unlinked: null. */
export async function linkedMember(
  env: Env,
  channel: Channel,
  teamId: string,
  externalUserId: string,
): Promise<{ userId: string; name: string; role: Role } | null> {
  return channelLinkMember(env.DB, teamId, channel, externalUserId);
}
