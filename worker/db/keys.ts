/** D1 access: API keys. */
import type { AuditEvent } from "../audit-chain";
import type { AgentIdentity } from "../types";
import { auditOutboxStatements } from "./audit";

export interface ApiKeyRow {
  id: string;
  label: string;
  prefix: string;
  userId: string;
  owner: { userId: string; name: string };
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

/** A live key belongs to a member of its team: a removed member's keys stop working at once. */
export const KEY_OWNER_IS_MEMBER =
  "EXISTS (SELECT 1 FROM memberships m WHERE m.team_id = api_keys.team_id AND m.user_id = api_keys.user_id)";

/** How long a revoked key still counts against the team's key ceiling: making and revoking keys in a loop is bounded too. */
export const KEY_CEILING_WINDOW_MS = 24 * 60 * 60 * 1000;

/**
 * The keys that count against the ceiling, in SQL over `api_keys` (team `?team`, now `?now`):
 * live keys, and keys made within `KEY_CEILING_WINDOW_MS` whatever became of them.
 */
export const countedKeys = (team: string, now: string) =>
  `(SELECT COUNT(*) FROM api_keys ck WHERE ck.team_id = ${team}
     AND (ck.revoked_at IS NULL OR ck.created_at > ${now} - ${KEY_CEILING_WINDOW_MS}))`;

/**
 * Makes a key for a member of the team while the team has fewer than `ceiling` counted keys
 * (`countedKeys`, in the same statement), with `audit` (the event that records it) queued in
 * the same batch and only if the key was made. Says why nothing was made otherwise.
 */
export async function createApiKey(
  db: D1Database,
  k: { id: string; teamId: string; userId: string; hash: string; prefix: string; label: string; now: number },
  ceiling: number,
  audit?: AuditEvent,
): Promise<"made" | "not_member" | "over_ceiling"> {
  const insert = db
    .prepare(
      `INSERT INTO api_keys (id, team_id, user_id, key_hash, prefix, label, created_at)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7
        WHERE EXISTS (SELECT 1 FROM memberships WHERE team_id = ?2 AND user_id = ?3)
          AND ${countedKeys("?2", "?7")} < ?8`,
    )
    .bind(k.id, k.teamId, k.userId, k.hash, k.prefix, k.label, k.now, ceiling);
  const made = { sql: "EXISTS (SELECT 1 FROM api_keys WHERE id = ?5)", binds: [k.id] };
  const member = db
    .prepare("SELECT EXISTS (SELECT 1 FROM memberships WHERE team_id = ?1 AND user_id = ?2) AS member")
    .bind(k.teamId, k.userId);
  const [result, checked] = await db.batch<{ member?: number }>([
    insert,
    member,
    ...auditOutboxStatements(db, audit, made),
  ]);
  if ((result?.meta.changes ?? 0) > 0) return "made";
  return checked?.results[0]?.member ? "over_ceiling" : "not_member";
}

/** The team's keys, or (with `userId`) only that user's. */
export async function listApiKeys(db: D1Database, teamId: string, userId: string | null): Promise<ApiKeyRow[]> {
  const { results } = await db
    .prepare(
      `SELECT k.id, k.label, k.prefix, k.user_id AS userId, u.name AS ownerName, k.created_at AS createdAt,
              k.last_used_at AS lastUsedAt, k.revoked_at AS revokedAt
         FROM api_keys k JOIN users u ON u.id = k.user_id
        WHERE k.team_id = ?1 AND (?2 IS NULL OR k.user_id = ?2) ORDER BY k.created_at DESC, k.id`,
    )
    .bind(teamId, userId)
    .all<Omit<ApiKeyRow, "owner"> & { ownerName: string }>();
  return results.map(({ ownerName, ...k }) => ({ ...k, owner: { userId: k.userId, name: ownerName } }));
}

/**
 * Revokes one key of the team (with `userId`, only that user's; with `spareOwners`, never an
 * owner's) and returns when it was revoked and the sessions it opened — also for a key revoked
 * before, so a retry reaches every session again. Null when no such key is visible. `audit` is
 * queued in the same batch, only if this call revoked the key.
 */
export async function revokeApiKey(
  db: D1Database,
  r: { teamId: string; userId: string | null; spareOwners: boolean; keyId: string; now: number },
  audit?: AuditEvent,
): Promise<{ revokedAt: number; sessions: string[] } | null> {
  const revokedNow = {
    sql: "EXISTS (SELECT 1 FROM api_keys WHERE id = ?5 AND team_id = ?6 AND revoked_at = ?7)",
    binds: [r.keyId, r.teamId, r.now],
  };
  const [revoked, sessions] = await db.batch<{ revoked_at?: number; session_id?: string }>([
    db
      .prepare(
        `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?1)
          WHERE id = ?2 AND team_id = ?3 AND (?4 IS NULL OR user_id = ?4)
            AND (?5 = 0 OR NOT EXISTS (SELECT 1 FROM memberships m
                                         WHERE m.team_id = ?3 AND m.user_id = api_keys.user_id AND m.role = 'owner'))
         RETURNING revoked_at`,
      )
      .bind(r.now, r.keyId, r.teamId, r.userId, r.spareOwners ? 1 : 0),
    db.prepare("SELECT session_id FROM agent_session_keys WHERE key_id = ? AND team_id = ?").bind(r.keyId, r.teamId),
    ...auditOutboxStatements(db, audit, revokedNow),
  ]);
  const revokedAt = revoked?.results[0]?.revoked_at;
  if (revokedAt === undefined) return null;
  return { revokedAt, sessions: (sessions?.results ?? []).map((s) => s.session_id as string) };
}

/** A revoked key as the team's hub reads it back from D1, with the sessions it opened. */
export interface RevokedKeyRecord {
  keyId: string;
  revokedAt: number;
  sessions: string[];
}

/** Where a read of revoked keys goes on from: after this revocation time and, at that time, this key id. */
export interface RevokedKeysCursor {
  revokedAt: number;
  keyId: string;
}

/**
 * The team's keys revoked after `after`, in (time, id) order, at most `limit`: the hub reads them
 * back, so a revocation whose call to it failed still reaches it (`hub/revocations.ts`).
 */
export async function keysRevokedAfter(
  db: D1Database,
  teamId: string,
  after: RevokedKeysCursor,
  limit: number,
): Promise<RevokedKeyRecord[]> {
  const { results } = await db
    .prepare(
      `SELECT k.id, k.revoked_at,
              (SELECT json_group_array(s.session_id) FROM agent_session_keys s
                WHERE s.key_id = k.id AND s.team_id = k.team_id) AS sessions
         FROM api_keys k
        WHERE k.team_id = ? AND k.revoked_at IS NOT NULL AND (k.revoked_at, k.id) > (?, ?)
        ORDER BY k.revoked_at, k.id LIMIT ?`,
    )
    .bind(teamId, after.revokedAt, after.keyId, limit)
    .all<{ id: string; revoked_at: number; sessions: string }>();
  return results.map((r) => ({ keyId: r.id, revokedAt: r.revoked_at, sessions: JSON.parse(r.sessions) as string[] }));
}

/**
 * How long a Worker isolate may take a key from its cached copy (`auth.ts`), each use vouched for
 * by the team's hub (`hub/vouching.ts`).
 */
export const AGENT_KEY_CACHE_MS = 10_000;

/** Whether key `keyId` of the team is live in D1: not revoked, its user still a member. */
export async function keyLive(db: D1Database, teamId: string, keyId: string): Promise<boolean> {
  const row = await db
    .prepare(`SELECT 1 FROM api_keys WHERE id = ? AND team_id = ? AND revoked_at IS NULL AND ${KEY_OWNER_IS_MEMBER}`)
    .bind(keyId, teamId)
    .first();
  return row !== null;
}

/** The identity of a live key whose user is still a member of its team, or null. */
export async function findAgentKey(db: D1Database, keyHash: string): Promise<AgentIdentity | null> {
  const row = await db
    .prepare(
      `SELECT id, user_id, team_id FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL AND ${KEY_OWNER_IS_MEMBER}`,
    )
    .bind(keyHash)
    .first<{ id: string; user_id: string; team_id: string }>();
  return row ? { keyId: row.id, userId: row.user_id, teamId: row.team_id } : null;
}

export function touchApiKey(db: D1Database, keyId: string, now: number): Promise<unknown> {
  return db.prepare("UPDATE api_keys SET last_used_at = ? WHERE id = ?").bind(now, keyId).run();
}

export interface AgentProfile {
  team: { id: string; name: string };
  user: { id: string; name: string; email: string };
  key: { id: string; prefix: string; label: string };
}

/** Whom an agent key speaks for (`tapgate status`). */
export async function getAgentProfile(db: D1Database, teamId: string, keyId: string): Promise<AgentProfile | null> {
  const row = await db
    .prepare(
      `SELECT t.id AS team_id, t.name AS team_name, u.id AS user_id, u.name AS user_name, u.email,
              k.id AS key_id, k.prefix, k.label
         FROM api_keys k JOIN users u ON u.id = k.user_id JOIN teams t ON t.id = k.team_id
        WHERE k.id = ? AND k.team_id = ?`,
    )
    .bind(keyId, teamId)
    .first<
      Record<"team_id" | "team_name" | "user_id" | "user_name" | "email" | "key_id" | "prefix" | "label", string>
    >();
  if (!row) return null;
  return {
    team: { id: row.team_id, name: row.team_name },
    user: { id: row.user_id, name: row.user_name, email: row.email },
    key: { id: row.key_id, prefix: row.prefix, label: row.label },
  };
}
