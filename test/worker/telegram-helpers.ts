/**
 * Test helpers for Telegram: the fake Bot API's record of calls (test/fakes/telegram-bot-api.mjs,
 * on 127.0.0.1, at `TELEGRAM_API_URL`), scripted failures, and updates posted to the webhook as
 * Telegram posts them (the secret token header, an `Update` body).
 */
import { env, SELF } from "cloudflare:test";
import type { TelegramUpdate } from "../../sdk/src/human/telegram";
import { ORIGIN } from "./helpers";

export const WEBHOOK_PATH = "/v1/channels/telegram/webhook";

export interface BotApiCall {
  method: string;
  body: Record<string, unknown>;
  /** What the fake answered, when it answered `ok` (a sent message: its `message_id`). */
  result?: { message_id?: number } | true;
}

const fakeUrl = () => env.TELEGRAM_API_URL ?? "";

/** Every Bot API call the fake received for `chatId` (by `chat_id`), in order. */
export async function callsTo(chatId: number): Promise<BotApiCall[]> {
  const calls = (await (await fetch(`${fakeUrl()}/__calls`)).json()) as BotApiCall[];
  return calls.filter((c) => String(c.body.chat_id) === String(chatId));
}

/** Every `answerCallbackQuery` for the tap `callbackId`. */
export async function answersTo(callbackId: string): Promise<BotApiCall[]> {
  const calls = (await (await fetch(`${fakeUrl()}/__calls`)).json()) as BotApiCall[];
  return calls.filter((c) => c.method === "answerCallbackQuery" && c.body.callback_query_id === callbackId);
}

/** Makes the fake's next `method` call for `chatId` fail as Telegram would (or never answer). */
export async function failNext(
  method: string,
  chatId: number,
  failure: { error_code: number; description: string; retry_after?: number } | { hang: true },
): Promise<void> {
  const response = await fetch(`${fakeUrl()}/__fail`, {
    method: "POST",
    body: JSON.stringify({ method, chat_id: String(chatId), ...failure }),
  });
  if (!response.ok) throw new Error(`the fake refused the script: ${response.status}`);
}

/** A fresh Telegram user (and private chat) id per test: the fake is shared by every test file. */
export const newTelegramUser = () => 1_000_000_000 + Math.floor(Math.random() * 1_000_000_000_000);

/** Posts `update` to the webhook as Telegram does; `secret` overrides (or with null, omits) the header. */
export function postUpdate(
  update: unknown,
  secret: string | null = env.TELEGRAM_WEBHOOK_SECRET ?? "",
): Promise<Response> {
  const headers = new Headers({ "Content-Type": "application/json" });
  if (secret !== null) headers.set("X-Telegram-Bot-Api-Secret-Token", secret);
  return SELF.fetch(`${ORIGIN}${WEBHOOK_PATH}`, { method: "POST", headers, body: JSON.stringify(update) });
}

let updates = 0;
/** A private-chat text message from `userId` (the chat id is the user id, as Telegram has it). */
export function textUpdate(userId: number, text: string): TelegramUpdate {
  return {
    update_id: ++updates,
    message: {
      message_id: updates,
      from: { id: userId, is_bot: false, first_name: "Ada" },
      chat: { id: userId, type: "private" },
      text,
    },
  };
}

/** A tap on a card's button: `data` is the button's `callback_data`, `messageId` the card's message. */
export function tapUpdate(userId: number, chatId: number, messageId: number, data: string) {
  const id = `cb-${++updates}-${userId}`;
  const update: TelegramUpdate = {
    update_id: updates,
    callback_query: {
      id,
      from: { id: userId, is_bot: false, first_name: "Ada" },
      message: { message_id: messageId, chat: { id: chatId, type: "private" } },
      data,
    },
  };
  return { id, update };
}
