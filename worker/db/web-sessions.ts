/**
 * D1 access: web sessions (one row per signed-in browser). A session has a public id (`wss_…`)
 * for the sessions API; its token is only ever stored hashed, and the hash never leaves the
 * Worker. A session ends at its absolute lifetime or after an idle stretch, whichever is first.
 */
import type { Role } from "../../sdk/src/human/roles";
import type { AuditEvent } from "../audit-chain";
import { newId } from "../crypto";
import type { WebIdentity } from "../types";
import { auditOutboxStatement } from "./audit";

/** Absolute lifetime: a session ends this long after sign-in, however busy. */
export const WEB_SESSION_MS = 30 * 24 * 60 * 60 * 1000;
/** Idle expiry: a session not seen for this long ends. */
export const WEB_SESSION_IDLE_MS = 14 * 24 * 60 * 60 * 1000;
/**
 * How long a Worker isolate may answer from its cached copy of a session (`auth.ts`): a change
 * made elsewhere reaches its cached routes within this.
 */
export const WEB_IDENTITY_CACHE_MS = 10_000;
/** `last_seen_at` is written at most this often per session (it is a write per request otherwise). */
const TOUCH_EVERY_MS = 5 * 60 * 1000;

/** When a session seen at `lastSeenAt` and ending at `expiresAt` stops being valid. */
export function webSessionDeadline(s: { lastSeenAt: number; expiresAt: number }): number {
  return Math.min(s.expiresAt, s.lastSeenAt + WEB_SESSION_IDLE_MS);
}

const LIVE = "s.expires_at > ?2 AND s.last_seen_at > ?2 - ?3";

/** The signed-in person of a live session, in its team, or null; marks it seen. */
export async function findWebSession(db: D1Database, tokenHash: string, now: number): Promise<WebIdentity | null> {
  const row = await db
    .prepare(
      `SELECT s.id, s.user_id, u.email, u.name, s.team_id, t.name AS team_name, m.role,
              s.signed_in_at, s.last_seen_at, s.expires_at
         FROM web_sessions s
         JOIN users u ON u.id = s.user_id
         JOIN memberships m ON m.user_id = s.user_id AND m.team_id = s.team_id
         JOIN teams t ON t.id = s.team_id
        WHERE s.token_hash = ?1 AND ${LIVE}`,
    )
    .bind(tokenHash, now, WEB_SESSION_IDLE_MS)
    .first<{
      id: string | null;
      user_id: string;
      email: string;
      name: string;
      team_id: string;
      team_name: string;
      role: Role;
      signed_in_at: number | null;
      last_seen_at: number;
      expires_at: number;
    }>();
  if (!row) return null;
  let lastSeenAt = row.last_seen_at;
  if (now - lastSeenAt > TOUCH_EVERY_MS) {
    await db.prepare("UPDATE web_sessions SET last_seen_at = ? WHERE token_hash = ?").bind(now, tokenHash).run();
    lastSeenAt = now;
  }
  return {
    userId: row.user_id,
    email: row.email,
    name: row.name,
    teamId: row.team_id,
    teamName: row.team_name,
    role: row.role,
    tokenHash,
    sessionId: row.id ?? "",
    signedInAt: row.signed_in_at ?? 0,
    validUntil: webSessionDeadline({ lastSeenAt, expiresAt: row.expires_at }),
  };
}

/** A new session; `audit` builds the events that record it from its id, queued in the same batch. */
export async function createWebSession(
  db: D1Database,
  s: { tokenHash: string; userId: string; teamId: string; method: string; userAgent: string | null; now: number },
  audit: (sessionId: string) => AuditEvent[] = () => [],
): Promise<string> {
  const id = newId("wss");
  await db.batch([
    db
      .prepare(
        `INSERT INTO web_sessions (token_hash, id, user_id, team_id, method, user_agent, created_at, signed_in_at,
                                   expires_at, last_seen_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?7)`,
      )
      .bind(s.tokenHash, id, s.userId, s.teamId, s.method, s.userAgent, s.now, s.now + WEB_SESSION_MS),
    ...audit(id).map((e) => auditOutboxStatement(db, e)),
  ]);
  return id;
}

/**
 * A fresh sign-in on a session the person already holds: only the sign-in time moves. `audit` is
 * queued in the same batch, only if the session was still there to move.
 */
export async function markSignedIn(
  db: D1Database,
  s: { tokenHash: string; method: string; now: number },
  audit: AuditEvent[] = [],
) {
  const moved = {
    sql: "EXISTS (SELECT 1 FROM web_sessions WHERE token_hash = ?5 AND signed_in_at = ?6)",
    binds: [s.tokenHash, s.now],
  };
  await db.batch([
    db
      .prepare("UPDATE web_sessions SET signed_in_at = ?1, last_seen_at = ?1, method = ?2 WHERE token_hash = ?3")
      .bind(s.now, s.method, s.tokenHash),
    ...audit.map((e) => auditOutboxStatement(db, e, moved)),
  ]);
}

export async function deleteWebSession(db: D1Database, tokenHash: string): Promise<void> {
  await db.prepare("DELETE FROM web_sessions WHERE token_hash = ?").bind(tokenHash).run();
}

export interface WebSessionRow {
  id: string;
  method: string;
  userAgent: string | null;
  createdAt: number;
  lastSeenAt: number;
  teamId: string;
}

/** A person's live sessions, most recently seen first. */
export async function listWebSessions(db: D1Database, userId: string, now: number): Promise<WebSessionRow[]> {
  const { results } = await db
    .prepare(
      `SELECT s.id, s.method, s.user_agent AS userAgent, s.created_at AS createdAt, s.last_seen_at AS lastSeenAt,
              s.team_id AS teamId
         FROM web_sessions s WHERE s.user_id = ?1 AND s.id IS NOT NULL AND ${LIVE}
        ORDER BY s.last_seen_at DESC, s.id`,
    )
    .bind(userId, now, WEB_SESSION_IDLE_MS)
    .all<WebSessionRow>();
  return results;
}

/**
 * Ends a person's sessions: one by id, or (with `exceptTokenHash`) all but that one. Answers what
 * the caller must also end: each session's token hash (cached per isolate) and team (its feed).
 */
export async function deleteWebSessions(
  db: D1Database,
  d: { userId: string; id: string } | { userId: string; exceptTokenHash: string },
): Promise<Array<{ tokenHash: string; teamId: string }>> {
  const statement =
    "id" in d
      ? db
          .prepare("DELETE FROM web_sessions WHERE user_id = ? AND id = ? RETURNING token_hash, team_id")
          .bind(d.userId, d.id)
      : db
          .prepare("DELETE FROM web_sessions WHERE user_id = ? AND token_hash <> ? RETURNING token_hash, team_id")
          .bind(d.userId, d.exceptTokenHash);
  const { results } = await statement.all<{ token_hash: string; team_id: string }>();
  return results.map((r) => ({ tokenHash: r.token_hash, teamId: r.team_id }));
}

/** Whether a session is still live and in this team with its membership (read fresh, uncached). */
export async function webSessionInTeam(
  db: D1Database,
  s: { tokenHash: string; teamId: string; now: number },
): Promise<boolean> {
  const row = await db
    .prepare(
      `SELECT 1 AS ok FROM web_sessions s
         JOIN memberships m ON m.user_id = s.user_id AND m.team_id = s.team_id
        WHERE s.token_hash = ?1 AND s.team_id = ?4 AND ${LIVE}`,
    )
    .bind(s.tokenHash, s.now, WEB_SESSION_IDLE_MS, s.teamId)
    .first();
  return row !== null;
}
