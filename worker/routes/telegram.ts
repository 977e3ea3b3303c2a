/**
 * `POST /v1/channels/telegram/webhook`: the updates Telegram posts to this deployment's bot.
 * `404` when Telegram is not set up; `401 bad_webhook_secret` without the right
 * `X-Telegram-Bot-Api-Secret-Token` (checked before the body is read); after that always `200`:
 * an update that does not parse, or whose handling fails, is ignored, because Telegram retries
 * any other answer for as long as the update is stored. The handling is `channels/telegram/webhook.ts`.
 */
import { Hono } from "hono";
import { telegramUpdateSchema } from "../../sdk/src/human/telegram";
import { requireChannel } from "../channels/settings";
import { handleUpdate, webhookSecretMatches } from "../channels/telegram/webhook";
import { DomainError } from "../errors";
import type { AppEnv } from "../types";

export const TELEGRAM_WEBHOOK_PATH = "/v1/channels/telegram/webhook";

export const telegramRoutes = new Hono<AppEnv>().post(TELEGRAM_WEBHOOK_PATH, async (c) => {
  requireChannel(c.env, "telegram");
  if (!webhookSecretMatches(c.env, c.req.header("X-Telegram-Bot-Api-Secret-Token"))) {
    throw new DomainError("bad_webhook_secret");
  }
  const update = telegramUpdateSchema.safeParse(await c.req.json().catch(() => null));
  if (!update.success) return c.json({ ok: true });
  try {
    await handleUpdate(c.env, update.data);
  } catch (error) {
    // Never the update itself in a log: it holds people's names and messages.
    console.error("telegram update not handled", error instanceof Error ? error.name : "unknown");
  }
  return c.json({ ok: true });
});
