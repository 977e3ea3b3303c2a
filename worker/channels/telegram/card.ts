/**
 * What a Telegram card says and which buttons it has (pure, unit-tested beside it): the
 * lock-screen text the `ChannelCard` carries and nothing more; **Allow once** / **Deny** as
 * callback buttons and **Open in Tapgate** as a URL button; a high-risk request has no Allow
 * button and says it needs the passkey. Plain text (no `parse_mode`): an agent's title is never
 * read as markup. Also the text a card ends with, and reading a button's `callback_data`.
 *
 * Owns: texts, the keyboard, `callback_data`. Does not own: the stored row a button's key names
 * (`worker/db/telegram-cards.ts`), sending (`bot-api.ts`), deciding (`channel-decision.ts`).
 */
import type { InlineKeyboardButton, InlineKeyboardMarkup } from "grammy/types";
import { TELEGRAM_CALLBACK_PATTERN } from "../../../sdk/src/human/telegram";
import type { ChannelCard, ChannelEnding } from "../channel";

export { HIGH_RISK_LINE } from "../card-allow";

/** Telegram's limit on a message's text. */
const MAX_TEXT = 4096;

export type TapAnswer = "allow_once" | "deny";

/** The card's text: who asks, the lock-screen line, and for a high-risk request why there is no Allow. */
export function cardText(card: Pick<ChannelCard, "text" | "noAllow">): string {
  const lines = ["Tapgate: an agent asks for approval", card.text];
  if (card.noAllow !== null) lines.push(card.noAllow);
  return lines.join("\n\n").slice(0, MAX_TEXT);
}

/** The buttons: `key` is the card's stored row (22 base62 characters), so each `callback_data` is 24 bytes. */
export function cardKeyboard(card: Pick<ChannelCard, "noAllow" | "link">, key: string): InlineKeyboardMarkup {
  const answers: InlineKeyboardButton[] = [];
  if (card.noAllow === null) answers.push({ text: "Allow once", callback_data: `a:${key}` });
  answers.push({ text: "Deny", callback_data: `d:${key}` });
  return { inline_keyboard: [answers, [{ text: "Open in Tapgate", url: card.link }]] };
}

/** What the message says once the request ended ("Allowed by Ada on Telegram", "Expired"); no buttons. */
export function endedText(card: Pick<ChannelCard, "text">, ending: ChannelEnding): string {
  return ["Tapgate: an agent asked for approval", card.text, ending.text].join("\n\n").slice(0, MAX_TEXT);
}

/** A button's `callback_data` read back: the answer and the row's key, or null for anything else. */
export function readTap(data: string | undefined): { answer: TapAnswer; key: string } | null {
  const match = TELEGRAM_CALLBACK_PATTERN.exec(data ?? "");
  if (!match?.[1] || !match[2]) return null;
  return { answer: match[1] === "a" ? "allow_once" : "deny", key: match[2] };
}
