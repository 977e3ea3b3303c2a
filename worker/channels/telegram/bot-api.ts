/**
 * The Telegram Bot API as Tapgate uses it, through grammY's `Api` client (its web build: the
 * Worker's own `fetch`): `sendMessage` with an inline keyboard, `answerCallbackQuery`,
 * `editMessageText`, and `getMe` for the bot's username (the deep link), kept per isolate.
 * Every call is bounded by a timeout; a failure becomes a `ChannelFailure`, retryable for a
 * `429` (Telegram's `retry_after`), a `5xx`, a timeout or a network error, final for the rest
 * (`400` a chat or message that is gone, `403` the person blocked the bot, `401` a wrong token).
 *
 * Owns: the client, its base URL (`TELEGRAM_API_URL`) and the error classification. Does not
 * own: what a card says (`card.ts`), which chat gets it (`adapter.ts`), the webhook (`webhook.ts`).
 */
import type { InlineKeyboardMarkup } from "grammy/types";
import { Api, GrammyError, HttpError } from "grammy/web";
import { ALARM_BUDGET_MS, REQUEST_BUDGET_MS } from "../../deadline";
import type { Env } from "../../types";
import { ChannelFailure } from "../channel";
import { telegramApiUrl } from "../settings";

/** A bounded call from the hub's queue or the webhook: the alarm path's budget. */
const CALL_TIMEOUT_MS = ALARM_BUDGET_MS;

/** The bot's settings, or null when this deployment has no Telegram bot. */
function botOf(env: Env): { token: string; apiRoot: string } | null {
  if (!env.TELEGRAM_BOT_TOKEN) return null;
  // grammY refuses a trailing slash; an operator may well write one.
  const apiRoot = telegramApiUrl(env).replace(/\/+$/, "");
  return { token: env.TELEGRAM_BOT_TOKEN, apiRoot };
}

function apiOf(env: Env): Api {
  const bot = botOf(env);
  if (!bot) throw new ChannelFailure(false, "telegram: TELEGRAM_BOT_TOKEN is not set");
  return new Api(bot.token, { apiRoot: bot.apiRoot });
}

/** grammY types its signal by the `abort-controller` shim's class; at run time it takes the platform's. */
type GrammySignal = NonNullable<Parameters<Api["getMe"]>[0]>;

/** Runs one Bot API call within `ms`, turning every failure into a classified `ChannelFailure`. */
async function call<T>(method: string, ms: number, run: (signal: GrammySignal) => Promise<T>): Promise<T> {
  try {
    return await run(AbortSignal.timeout(ms) as unknown as GrammySignal);
  } catch (error) {
    throw classify(method, error);
  }
}

/** What a failed call means for the post queue; messages name the method and code, never the token. */
export function classify(method: string, error: unknown): ChannelFailure {
  if (error instanceof ChannelFailure) return error;
  if (error instanceof GrammyError) {
    const retryable = error.error_code === 429 || error.error_code >= 500;
    const retryAfter = error.parameters.retry_after;
    const wait = retryAfter === undefined ? "" : ` (retry after ${retryAfter} s)`;
    return new ChannelFailure(retryable, `telegram ${method}: ${error.error_code} ${error.description}${wait}`);
  }
  // HttpError: no answer in time, a refused connection, or a body that is not the API's JSON (a proxy's 502 page).
  if (error instanceof HttpError) return new ChannelFailure(true, `telegram ${method}: no usable answer`);
  return new ChannelFailure(true, `telegram ${method}: failed`);
}

/** Sends `text` with `keyboard` to `chatId`; resolves with the message id (`editMessageText` needs it). */
export async function sendCard(
  env: Env,
  chatId: string,
  text: string,
  keyboard: InlineKeyboardMarkup,
): Promise<number> {
  const api = apiOf(env);
  const message = await call("sendMessage", CALL_TIMEOUT_MS, (signal) =>
    api.sendMessage(chatId, text, { reply_markup: keyboard, link_preview_options: { is_disabled: true } }, signal),
  );
  return message.message_id;
}

/** A plain reply in a chat (the answer to `/start <code>`). */
export async function sendText(env: Env, chatId: string, text: string): Promise<void> {
  const api = apiOf(env);
  await call("sendMessage", CALL_TIMEOUT_MS, (signal) => api.sendMessage(chatId, text, {}, signal));
}

/**
 * Replaces a card's text and removes its buttons (no `reply_markup`). A message already showing
 * that text ("message is not modified") counts as done: a retried update must not fail forever.
 */
export async function endCard(env: Env, chatId: string, messageId: number, text: string): Promise<void> {
  const api = apiOf(env);
  try {
    await call("editMessageText", CALL_TIMEOUT_MS, (signal) =>
      api.editMessageText(chatId, messageId, text, {}, signal),
    );
  } catch (error) {
    if (error instanceof ChannelFailure && /message is not modified/i.test(error.message)) return;
    throw error;
  }
}

/** The toast a tap gets; `alert` shows it as a dialog (a refusal the person must read). */
export async function answerTap(env: Env, callbackQueryId: string, text: string, alert: boolean): Promise<void> {
  const api = apiOf(env);
  await call("answerCallbackQuery", CALL_TIMEOUT_MS, (signal) =>
    api.answerCallbackQuery(callbackQueryId, { text: text.slice(0, 200), show_alert: alert }, signal),
  );
}

/** The bot's username per token, for the isolate's life: it changes only with the token. */
const usernames = new Map<string, string>();

/** The bot's username (`getMe`), for the deep link `https://t.me/<bot>?start=<code>`; a person waits on it. */
export async function botUsername(env: Env): Promise<string> {
  const bot = botOf(env);
  const known = bot && usernames.get(bot.token);
  if (known) return known;
  const api = apiOf(env);
  const me = await call("getMe", REQUEST_BUDGET_MS, (signal) => api.getMe(signal));
  usernames.set(env.TELEGRAM_BOT_TOKEN ?? "", me.username);
  return me.username;
}
