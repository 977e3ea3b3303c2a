/**
 * The Telegram channel as the hub's post queue drives it (`ChannelAdapter`): the places a ladder
 * step reaches are the linked chats of its people; a post stores the card's row under a fresh
 * key and sends the card with its buttons; an end forgets the row (its buttons decide nothing
 * from then on) and edits the message to say how the request ended, buttons removed. `linkUrl`
 * is the deep link that hands a member's one-time code to the bot (`/start <code>`).
 *
 * Owns: mapping the adapter contract onto the Bot API. Does not own: the queue, its retries
 * and budget (`worker/hub/channel-posts.ts`), the links (`worker/db/channels.ts`), the texts
 * (`card.ts`), the calls (`bot-api.ts`).
 */
import { randomBase62 } from "../../crypto";
import { listChannelLinks } from "../../db/channels";
import { deleteTelegramCards, saveTelegramCard } from "../../db/telegram-cards";
import { DomainError } from "../../errors";
import type { Env } from "../../types";
import {
  type ChannelAdapter,
  type ChannelCard,
  type ChannelEnding,
  ChannelFailure,
  type ChannelTarget,
} from "../channel";
import { channelConfigured } from "../settings";
import { botUsername, endCard, sendCard } from "./bot-api";
import { cardKeyboard, cardText, endedText } from "./card";

/** A D1 failure on the way is the queue's to try again, as a network failure is. */
async function stored<T>(what: string, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch {
    throw new ChannelFailure(true, `telegram: ${what} failed`);
  }
}

async function post(env: Env, target: ChannelTarget, card: ChannelCard): Promise<{ ref: string }> {
  // 22 base62 characters (≈131 random bits): the buttons' `callback_data` stays within 64 bytes.
  const key = randomBase62(22);
  const row = {
    teamId: card.teamId,
    approvalId: card.approvalId,
    requestHash: card.requestHash,
    chatId: target.address,
    expiresAt: card.expiresAt,
  };
  await stored("storing the card", saveTelegramCard(env.DB, key, row, Date.now()));
  const messageId = await sendCard(env, target.address, cardText(card), cardKeyboard(card, key));
  return { ref: String(messageId) };
}

async function end(env: Env, target: ChannelTarget, ref: string, card: ChannelCard, ending: ChannelEnding) {
  await stored("forgetting the card", deleteTelegramCards(env.DB, card.teamId, card.approvalId, target.address));
  const messageId = Number(ref);
  if (!Number.isSafeInteger(messageId))
    throw new ChannelFailure(false, "telegram: the post's reference is not a message id");
  await endCard(env, target.address, messageId, endedText(card, ending));
}

export const telegramAdapter: ChannelAdapter = {
  channel: "telegram",
  configured: (env) => channelConfigured(env, "telegram"),
  async targets(env, teamId, userIds) {
    const links = await listChannelLinks(env.DB, teamId, "telegram", userIds);
    return links.map((link) => ({ userId: link.userId, address: link.address }));
  },
  post,
  end,
  async linkUrl(env, code) {
    const bot = await botUsername(env).catch(() => {
      throw new DomainError("service_unavailable", "Telegram did not answer; try again", {
        headers: { "Retry-After": "5" },
      });
    });
    return `https://t.me/${bot}?start=${encodeURIComponent(code)}`;
  },
};
