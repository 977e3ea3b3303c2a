/**
 * Telegram: what the Worker reads of an Update the Bot API posts to its webhook (the published
 * `Update`, `Message`, `CallbackQuery` types, cut to the fields Tapgate uses: unknown fields
 * are dropped), and the buttons' `callback_data`. Shared by the Worker and the tests (the fake
 * Bot API builds its updates with these shapes). Owns no behaviour.
 */
import { z } from "zod";

/** Telegram's ids are integers up to 52 significant bits: exact as JS numbers. */
const telegramIdSchema = z.number().int().safe();

const telegramUserSchema = z.object({ id: telegramIdSchema, is_bot: z.boolean(), first_name: z.string() });
const telegramChatSchema = z.object({
  id: telegramIdSchema,
  type: z.enum(["private", "group", "supergroup", "channel"]),
});

export const telegramMessageSchema = z.object({
  message_id: z.number().int(),
  from: telegramUserSchema.optional(),
  chat: telegramChatSchema,
  text: z.string().optional(),
});

export const telegramCallbackQuerySchema = z.object({
  id: z.string().min(1),
  from: telegramUserSchema,
  /** Absent when the message is too old for Telegram to send. */
  message: z.object({ message_id: z.number().int(), chat: telegramChatSchema }).optional(),
  data: z.string().optional(),
});

export const telegramUpdateSchema = z.object({
  update_id: z.number().int(),
  message: telegramMessageSchema.optional(),
  callback_query: telegramCallbackQuerySchema.optional(),
});
export type TelegramUpdate = z.infer<typeof telegramUpdateSchema>;
export type TelegramMessage = z.infer<typeof telegramMessageSchema>;
export type TelegramCallbackQuery = z.infer<typeof telegramCallbackQuerySchema>;

/**
 * A card button's `callback_data` (Telegram allows 1–64 bytes): the answer (`a` allow once,
 * `d` deny) and the key of the card's stored row, 22 base62 characters. The row names the team,
 * the approval and the full `requestHash` the card showed; the key alone decides nothing.
 */
export const TELEGRAM_CALLBACK_PATTERN = /^([ad]):([0-9A-Za-z]{22})$/;
