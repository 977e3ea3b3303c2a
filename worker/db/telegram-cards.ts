/**
 * D1 access: Telegram cards (migration 0036), the rows a card's buttons name by a short key
 * (`callback_data` holds 64 bytes at most). Stored by the key's SHA-256; read by the webhook;
 * deleted when the card ends, and past the request's expiry whenever a card is stored.
 */
import { sha256Hex } from "../crypto";

export interface TelegramCardRow {
  teamId: string;
  approvalId: string;
  requestHash: string;
  chatId: string;
}

/** Stores a card's row under `key`, clearing rows of requests past their expiry in the same batch. */
export async function saveTelegramCard(
  db: D1Database,
  key: string,
  card: TelegramCardRow & { expiresAt: number },
  now: number,
): Promise<void> {
  await db.batch([
    db.prepare("DELETE FROM telegram_cards WHERE expires_at < ?").bind(now),
    db
      .prepare(
        `INSERT INTO telegram_cards (key_hash, team_id, approval_id, request_hash, chat_id, expires_at)
         VALUES (?, ?, ?, ?, ?, ?)`,
      )
      .bind(sha256Hex(key), card.teamId, card.approvalId, card.requestHash, card.chatId, card.expiresAt),
  ]);
}

/** The card a button's key names, or null (unknown, ended, or never stored). */
export async function findTelegramCard(db: D1Database, key: string): Promise<TelegramCardRow | null> {
  return db
    .prepare(
      `SELECT team_id AS teamId, approval_id AS approvalId, request_hash AS requestHash, chat_id AS chatId
         FROM telegram_cards WHERE key_hash = ?`,
    )
    .bind(sha256Hex(key))
    .first<TelegramCardRow>();
}

/** Forgets the cards of a request in one chat (it ended; their buttons are gone). */
export async function deleteTelegramCards(db: D1Database, teamId: string, approvalId: string, chatId: string) {
  await db
    .prepare("DELETE FROM telegram_cards WHERE team_id = ? AND approval_id = ? AND chat_id = ?")
    .bind(teamId, approvalId, chatId)
    .run();
}
