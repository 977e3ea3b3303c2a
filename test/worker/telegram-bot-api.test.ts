/**
 * The Bot API client against the fake Telegram on 127.0.0.1: the bodies it sends are the
 * published ones (the fake checks them), and each failure Telegram answers with is classified
 * for the post queue: a 429 (with `retry_after`), a 5xx and no answer are tried again; a 403
 * (the person blocked the bot) and a 400 are not.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ChannelFailure } from "../../worker/channels/channel";
import { answerTap, botUsername, endCard, sendCard } from "../../worker/channels/telegram/bot-api";
import type { Env } from "../../worker/types";
import { answersTo, callsTo, failNext, newTelegramUser } from "./telegram-helpers";

const workerEnv = env as unknown as Env;
const keyboard = { inline_keyboard: [[{ text: "Deny", callback_data: "d:0123456789012345678901" }]] };

async function failureOf(promise: Promise<unknown>): Promise<ChannelFailure> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof ChannelFailure)) throw new Error(`expected a ChannelFailure, got ${String(error)}`);
  return error;
}

describe("the Telegram Bot API client", () => {
  it("sends a card with its keyboard, edits it without buttons, and answers a tap", async () => {
    const chat = newTelegramUser();
    const messageId = await sendCard(workerEnv, String(chat), "Run npm test", keyboard);
    await endCard(workerEnv, String(chat), messageId, "Run npm test\n\nExpired");
    // Editing to the same text again ("message is not modified") counts as done.
    await endCard(workerEnv, String(chat), messageId, "Run npm test\n\nExpired");
    const calls = await callsTo(chat);
    expect(calls.map((c) => c.method)).toEqual(["sendMessage", "editMessageText", "editMessageText"]);
    expect(calls[0]?.body).toMatchObject({ chat_id: String(chat), text: "Run npm test", reply_markup: keyboard });
    expect(calls[1]?.body).toMatchObject({ message_id: messageId, text: "Run npm test\n\nExpired" });
    expect(calls[1]?.body).not.toHaveProperty("reply_markup");

    const tapId = `cb-${chat}`;
    await answerTap(workerEnv, tapId, "x".repeat(300), true);
    const [answer] = await answersTo(tapId);
    expect(answer?.body).toMatchObject({ show_alert: true });
    expect(String(answer?.body.text)).toHaveLength(200);
  });

  it("reads the bot's username for the deep link", async () => {
    expect(await botUsername(workerEnv)).toBe("tapgate_test_bot");
  });

  it("tries again after a 429 (naming retry_after) and a 5xx, never after a 403 or a 400", async () => {
    const chat = newTelegramUser();
    const send = () => sendCard(workerEnv, String(chat), "Run npm test", keyboard);

    await failNext("sendMessage", chat, {
      error_code: 429,
      description: "Too Many Requests: retry after 7",
      retry_after: 7,
    });
    const limited = await failureOf(send());
    expect(limited.retryable).toBe(true);
    expect(limited.message).toContain("retry after 7 s");

    await failNext("sendMessage", chat, { error_code: 502, description: "Bad Gateway" });
    expect((await failureOf(send())).retryable).toBe(true);

    await failNext("sendMessage", chat, { error_code: 403, description: "Forbidden: bot was blocked by the user" });
    expect((await failureOf(send())).retryable).toBe(false);

    await failNext("editMessageText", chat, { error_code: 400, description: "Bad Request: message to edit not found" });
    expect((await failureOf(endCard(workerEnv, String(chat), 1, "Expired"))).retryable).toBe(false);
  });

  it("gives up on a Bot API that never answers, as a failure to try again", async () => {
    const chat = newTelegramUser();
    await failNext("sendMessage", chat, { hang: true });
    const failure = await failureOf(sendCard(workerEnv, String(chat), "Run npm test", keyboard));
    expect(failure.retryable).toBe(true);
    expect(failure.message).not.toContain(workerEnv.TELEGRAM_BOT_TOKEN ?? "never");
  }, 15_000);

  it("names no token in a failure: a wrong one is final", async () => {
    const wrong = { ...workerEnv, TELEGRAM_BOT_TOKEN: "999:wrong" };
    const failure = await failureOf(sendCard(wrong, "1", "Run npm test", keyboard));
    expect(failure.retryable).toBe(false);
    expect(failure.message).toContain("401");
    expect(failure.message).not.toContain("999:wrong");
  });
});
