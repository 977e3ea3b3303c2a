/** D1 access: passkeys and pairing. */
import type { Signup as SignupDetails } from "../../sdk/src/human/auth";
import type { AuditEvent } from "../audit-chain";
import { auditOutboxStatements } from "./audit";

/** Rows past their expiry are swept when new ones are made; used rows are kept until then. */
export function sweepExpired(
  db: D1Database,
  table: "sign_in_links" | "webauthn_challenges" | "pairing_tokens",
  now: number,
) {
  return db.prepare(`DELETE FROM ${table} WHERE expires_at < ?`).bind(now);
}

export type { SignupDetails };

export interface ChallengeUse {
  challenge: string;
  userId: string | null;
  signup: SignupDetails | null;
}

export async function createChallenge(
  db: D1Database,
  ch: ChallengeUse & { id: string; purpose: "register" | "login"; now: number; ttlMs: number },
): Promise<void> {
  await db.batch([
    sweepExpired(db, "webauthn_challenges", ch.now),
    db
      .prepare(
        `INSERT INTO webauthn_challenges (id, challenge, purpose, user_id, signup, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      )
      .bind(
        ch.id,
        ch.challenge,
        ch.purpose,
        ch.userId,
        ch.signup ? JSON.stringify(ch.signup) : null,
        ch.now,
        ch.now + ch.ttlMs,
      ),
  ]);
}

/**
 * Uses a challenge up, in one statement, so it works once even under races. A challenge bound to
 * a user is only found for that user (`userId` is the caller's, or null when signed out).
 */
export async function consumeChallenge(
  db: D1Database,
  q: { id: string; purpose: "register" | "login"; userId: string | null; now: number },
): Promise<ChallengeUse | null> {
  const row = await db
    .prepare(
      `UPDATE webauthn_challenges SET used_at = ?1
        WHERE id = ?2 AND purpose = ?3 AND used_at IS NULL AND expires_at > ?1
          AND (user_id IS NULL OR user_id = ?4)
        RETURNING challenge, user_id, signup`,
    )
    .bind(q.now, q.id, q.purpose, q.userId)
    .first<{ challenge: string; user_id: string | null; signup: string | null }>();
  if (!row) return null;
  const signup = row.signup ? (JSON.parse(row.signup) as SignupDetails) : null;
  return { challenge: row.challenge, userId: row.user_id, signup };
}

/** A verified credential, before it belongs to anyone (it may wait on a sign-up link). */
export interface NewPasskey {
  id: string;
  publicKey: string;
  counter: number;
  transports: string[];
  deviceName: string | null;
}

export interface PasskeyRow {
  id: string;
  userId: string;
  publicKey: string;
  counter: number;
  transports: string[];
  deviceName: string | null;
  createdAt: number;
  lastUsedAt: number | null;
}

const PASSKEY_COLUMNS = `id, user_id AS userId, public_key AS publicKey, counter, transports,
  device_name AS deviceName, created_at AS createdAt, last_used_at AS lastUsedAt`;

function passkeyFromRow(row: Omit<PasskeyRow, "transports"> & { transports: string }): PasskeyRow {
  return { ...row, transports: JSON.parse(row.transports) as string[] };
}

/** Stores a passkey for a user; false if that credential id exists. `audit` is queued with it, only if stored. */
export async function insertPasskey(
  db: D1Database,
  p: { passkey: NewPasskey; userId: string; now: number },
  audit?: AuditEvent,
): Promise<boolean> {
  const { passkey: k } = p;
  const stored = {
    sql: "EXISTS (SELECT 1 FROM passkey_credentials WHERE id = ?5 AND user_id = ?6 AND created_at = ?7)",
    binds: [k.id, p.userId, p.now],
  };
  const [inserted] = await db.batch([
    db
      .prepare(
        `INSERT INTO passkey_credentials (id, user_id, public_key, counter, transports, device_name, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING id`,
      )
      .bind(k.id, p.userId, k.publicKey, k.counter, JSON.stringify(k.transports), k.deviceName, p.now),
    ...auditOutboxStatements(db, audit, stored),
  ]);
  return (inserted?.results.length ?? 0) > 0;
}

export async function findPasskey(db: D1Database, id: string): Promise<PasskeyRow | null> {
  const row = await db
    .prepare(`SELECT ${PASSKEY_COLUMNS} FROM passkey_credentials WHERE id = ?`)
    .bind(id)
    .first<Omit<PasskeyRow, "transports"> & { transports: string }>();
  return row ? passkeyFromRow(row) : null;
}

export async function listPasskeys(db: D1Database, userId: string): Promise<PasskeyRow[]> {
  const { results } = await db
    .prepare(`SELECT ${PASSKEY_COLUMNS} FROM passkey_credentials WHERE user_id = ? ORDER BY created_at, id`)
    .bind(userId)
    .all<Omit<PasskeyRow, "transports"> & { transports: string }>();
  return results.map(passkeyFromRow);
}

/** Deletes one of the user's passkeys; false when they have none by that id. `audit` is queued with it, only if deleted. */
export async function deletePasskey(db: D1Database, userId: string, id: string, audit?: AuditEvent): Promise<boolean> {
  // Queued first, while the row it records the removal of is still there to check.
  const present = {
    sql: "EXISTS (SELECT 1 FROM passkey_credentials WHERE id = ?5 AND user_id = ?6)",
    binds: [id, userId],
  };
  const results = await db.batch([
    ...auditOutboxStatements(db, audit, present),
    db.prepare("DELETE FROM passkey_credentials WHERE id = ? AND user_id = ? RETURNING id").bind(id, userId),
  ]);
  return (results.at(-1)?.results.length ?? 0) > 0;
}

/**
 * Records a sign-in. The counter must grow (unless the authenticator keeps none and reports 0),
 * checked in the same statement, so two sign-ins replaying one counter cannot both pass.
 * Returns the owner, or null when the counter went backwards.
 */
export async function recordPasskeyUse(
  db: D1Database,
  u: { id: string; counter: number; now: number },
): Promise<string | null> {
  const row = await db
    .prepare(
      `UPDATE passkey_credentials SET counter = ?2, last_used_at = ?3
        WHERE id = ?1 AND (counter < ?2 OR (counter = 0 AND ?2 = 0))
        RETURNING user_id`,
    )
    .bind(u.id, u.counter, u.now)
    .first<{ user_id: string }>();
  return row?.user_id ?? null;
}

/** Stores a pairing token; `audit`, the event that records it, is queued in the same batch. */
export async function createPairingToken(
  db: D1Database,
  t: { tokenHash: string; userId: string; teamId: string; now: number; ttlMs: number },
  audit?: AuditEvent,
): Promise<void> {
  await db.batch([
    ...auditOutboxStatements(db, audit),
    sweepExpired(db, "pairing_tokens", t.now),
    db
      .prepare(
        `INSERT INTO pairing_tokens (token_hash, user_id, team_id, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?)`,
      )
      .bind(t.tokenHash, t.userId, t.teamId, t.now, t.now + t.ttlMs),
  ]);
}

/**
 * Uses a pairing token up, in one statement; only while its user is still in that team. `audit`
 * builds the event from whom the token is for (read first: that never changes) and is queued in
 * the same batch, only if this call used the token up.
 */
export async function claimPairingToken(
  db: D1Database,
  tokenHash: string,
  now: number,
  audit?: (p: { userId: string; teamId: string }) => AuditEvent,
): Promise<{ userId: string; teamId: string } | null> {
  const owner = await db
    .prepare("SELECT user_id AS userId, team_id AS teamId FROM pairing_tokens WHERE token_hash = ?")
    .bind(tokenHash)
    .first<{ userId: string; teamId: string }>();
  const usedNow = {
    sql: "EXISTS (SELECT 1 FROM pairing_tokens WHERE token_hash = ?5 AND used_at = ?6)",
    binds: [tokenHash, now],
  };
  const [claimed] = await db.batch<{ user_id: string; team_id: string }>([
    db
      .prepare(
        `UPDATE pairing_tokens SET used_at = ?2
        WHERE token_hash = ?1 AND used_at IS NULL AND expires_at > ?2
          AND EXISTS (SELECT 1 FROM memberships m
                       WHERE m.user_id = pairing_tokens.user_id AND m.team_id = pairing_tokens.team_id)
        RETURNING user_id, team_id`,
      )
      .bind(tokenHash, now),
    ...auditOutboxStatements(db, owner ? audit?.(owner) : undefined, usedNow),
  ]);
  const row = claimed?.results[0];
  return row ? { userId: row.user_id, teamId: row.team_id } : null;
}

/** Whom an unused, unexpired pairing token signs in, without using it up. */
export async function findPairingToken(
  db: D1Database,
  tokenHash: string,
  now: number,
): Promise<{ userId: string; email: string; name: string } | null> {
  return db
    .prepare(
      `SELECT u.id AS userId, u.email, u.name FROM pairing_tokens p JOIN users u ON u.id = p.user_id
        WHERE p.token_hash = ? AND p.used_at IS NULL AND p.expires_at > ?`,
    )
    .bind(tokenHash, now)
    .first<{ userId: string; email: string; name: string }>();
}
