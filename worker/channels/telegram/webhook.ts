/**
 * What the Telegram webhook does with an Update, once its secret token is checked: a tap on a
 * card's button (`callback_query`) goes to the one decision use case and is answered with its
 * result (`answerCallbackQuery`: a refusal says why, as an alert); `/start <code>` in a private
 * chat links that chat to the member whose one-time code it is, and says so. Anything else is
 * ignored: the route answers `200` for every update it read, so Telegram never retries one.
 *
 * Owns: the secret check and the update's handling. Does not own: deciding and its rules
 * (`worker/team/channel-decision.ts`), the link codes (`worker/team/channel-links.ts`), editing
 * the card once the request ends (the hub's post queue calls `adapter.ts`'s `end`).
 */
import type { TelegramCallbackQuery, TelegramMessage, TelegramUpdate } from "../../../sdk/src/human/telegram";
import { constantTimeEqual } from "../../crypto";
import { listMyTeams } from "../../db";
import { findTelegramCard } from "../../db/telegram-cards";
import { decideFromChannel } from "../../team/channel-decision";
import { completeChannelLink } from "../../team/channel-links";
import type { Env } from "../../types";
import { answerTap, sendText } from "./bot-api";
import { readTap } from "./card";

/** `/start`, `/start <code>` or `/start@bot <code>`: a deep link's payload arrives this way. */
const START = /^\/start(?:@\w+)?(?:\s+(\S+))?\s*$/;

export const NOT_WAITING = "Nothing was decided: this request is no longer waiting for an answer.";
/** The gate or D1 failed on the way: whether the tap decided is unknown, so the app is where to look. */
export const NOT_REACHED = "Tapgate did not confirm this answer: open in Tapgate to see where the request stands.";
export const HOW_TO_LINK =
  "This bot posts Tapgate approval requests. Link this chat in Tapgate: Devices → Link Telegram.";
export const LINK_REFUSED =
  "Nothing was linked: this link is invalid, expired or already used. Make a new one in Tapgate: Devices → Link Telegram.";
export const PRIVATE_ONLY = "Tapgate links only a private chat with this bot: open the link on your own account.";

/** Whether `given` (the `X-Telegram-Bot-Api-Secret-Token` header) is this deployment's secret, in constant time. */
export function webhookSecretMatches(env: Env, given: string | undefined): boolean {
  const expected = env.TELEGRAM_WEBHOOK_SECRET;
  if (!expected || given === undefined) return false;
  return constantTimeEqual(given, expected);
}

/** Handles one update; every failure is the caller's to swallow (the webhook still answers 200). */
export async function handleUpdate(env: Env, update: TelegramUpdate): Promise<void> {
  if (update.callback_query) return onTap(env, update.callback_query);
  if (update.message) return onMessage(env, update.message);
}

/**
 * A tap: the button's key names the card's row (team, approval, the `requestHash` shown, chat);
 * the tap decides only through `decideFromChannel`, which checks the tapper is a linked member
 * of that team with a deciding role, the hash, exactly once, and refuses a high-risk allow.
 */
async function onTap(env: Env, tap: TelegramCallbackQuery): Promise<void> {
  const read = readTap(tap.data);
  const card = read && (await findTelegramCard(env.DB, read.key));
  // A key from another chat (forwarded, or a message Telegram no longer sends) decides nothing.
  if (!read || !card || card.chatId !== String(tap.message?.chat.id)) {
    return answerTap(env, tap.id, NOT_WAITING, true);
  }
  const result = await decideFromChannel(env, {
    channel: "telegram",
    teamId: card.teamId,
    externalUserId: String(tap.from.id),
    approvalId: card.approvalId,
    requestHash: card.requestHash,
    answer: read.answer,
  }).catch(() => ({ ok: false, text: NOT_REACHED }));
  return answerTap(env, tap.id, result.text, !result.ok);
}

/** `/start <code>`: links this private chat to the code's member ("Linked to Ada in Acme"). */
async function onMessage(env: Env, message: TelegramMessage): Promise<void> {
  const start = START.exec(message.text ?? "");
  const chatId = String(message.chat.id);
  if (!start) return message.chat.type === "private" ? sendText(env, chatId, HOW_TO_LINK) : undefined;
  if (message.chat.type !== "private" || !message.from) return sendText(env, chatId, PRIVATE_ONLY);
  const code = start[1];
  if (!code) return sendText(env, chatId, HOW_TO_LINK);
  const linked = await completeChannelLink(env, "telegram", code, {
    externalUserId: String(message.from.id),
    address: chatId,
  });
  if (!linked) return sendText(env, chatId, LINK_REFUSED);
  const team = (await listMyTeams(env.DB, linked.userId)).find((t) => t.id === linked.teamId);
  return sendText(env, chatId, `Linked to ${linked.name} in ${team?.name ?? "your team"}.`);
}
