/**
 * D1 access: teams and members (the dashboard). Each change takes the audit event that records
 * it and queues it in the same batch, only if the change took effect.
 */
import { ADMIN_ROLES, ROLES, type Role, roleRank } from "../../sdk/src/human/roles";
import type { AuditEvent } from "../audit-chain";
import { auditOutboxStatements } from "./audit";

export interface TeamOfMine {
  id: string;
  name: string;
  role: Role;
}

export async function listMyTeams(db: D1Database, userId: string): Promise<TeamOfMine[]> {
  const { results } = await db
    .prepare(
      `SELECT t.id, t.name, m.role FROM memberships m JOIN teams t ON t.id = m.team_id
        WHERE m.user_id = ? ORDER BY m.created_at, t.id`,
    )
    .bind(userId)
    .all<TeamOfMine>();
  return results;
}

/** Moves a web session to another team, only if its user is a member there; false otherwise. */
export async function switchWebSession(
  db: D1Database,
  s: { tokenHash: string; userId: string; teamId: string },
): Promise<boolean> {
  const { meta } = await db
    .prepare(
      `UPDATE web_sessions SET team_id = ?3
        WHERE token_hash = ?1 AND user_id = ?2
          AND EXISTS (SELECT 1 FROM memberships WHERE team_id = ?3 AND user_id = ?2)`,
    )
    .bind(s.tokenHash, s.userId, s.teamId)
    .run();
  return meta.changes > 0;
}

export interface MemberRow {
  userId: string;
  name: string;
  email: string;
  role: Role;
  joinedAt: number;
}

export async function listMembers(db: D1Database, teamId: string): Promise<MemberRow[]> {
  const { results } = await db
    .prepare(
      `SELECT m.user_id AS userId, u.name, u.email, m.role, m.created_at AS joinedAt
         FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.team_id = ? ORDER BY m.created_at, u.id`,
    )
    .bind(teamId)
    .all<MemberRow>();
  return results;
}

export async function findMember(db: D1Database, teamId: string, userId: string): Promise<MemberRow | null> {
  return db
    .prepare(
      `SELECT m.user_id AS userId, u.name, u.email, m.role, m.created_at AS joinedAt
         FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.team_id = ? AND m.user_id = ?`,
    )
    .bind(teamId, userId)
    .first<MemberRow>();
}

/** A member's web sessions in a team: cached identities to forget when their role changes. */
export async function webSessionHashes(db: D1Database, teamId: string, userId: string): Promise<string[]> {
  const { results } = await db
    .prepare("SELECT token_hash FROM web_sessions WHERE team_id = ? AND user_id = ?")
    .bind(teamId, userId)
    .all<{ token_hash: string }>();
  return results.map((r) => r.token_hash);
}

/** The last-owner rule as SQL, so two concurrent demotions cannot both pass a count read earlier. */
const KEEPS_AN_OWNER = `(role <> 'owner' OR ?3 = 'owner'
  OR (SELECT COUNT(*) FROM memberships WHERE team_id = ?1 AND role = 'owner') > 1)`;

/**
 * Changes a role unless that would leave the team without an owner; false when it would. The
 * member holds the new role afterwards exactly when the update passed, so that is `audit`'s condition.
 */
export async function setMemberRole(
  db: D1Database,
  m: { teamId: string; userId: string; role: Role },
  audit?: AuditEvent,
): Promise<boolean> {
  const changed = {
    sql: "EXISTS (SELECT 1 FROM memberships WHERE team_id = ?5 AND user_id = ?6 AND role = ?7)",
    binds: [m.teamId, m.userId, m.role],
  };
  const [updated] = await db.batch([
    db
      .prepare(`UPDATE memberships SET role = ?3 WHERE team_id = ?1 AND user_id = ?2 AND ${KEEPS_AN_OWNER}`)
      .bind(m.teamId, m.userId, m.role),
    ...auditOutboxStatements(db, audit, changed),
  ]);
  return (updated?.meta.changes ?? 0) > 0;
}

export interface Removal {
  role: Role;
  left: boolean;
  removedAt: number;
}

/**
 * Removes a member, with their web sessions and push devices in this team, and revokes their
 * keys, in one batch, unless they are the last owner (null then). A `removed_members` row records
 * the removal, so removing again can finish what followed it. Returns what the caller must also
 * forget: session token hashes (cached per isolate) and device ids (the hub's copy). `audit` is
 * queued last, only if this call removed the member, with the role and the count of keys revoked
 * as the batch found them.
 */
export async function removeMember(
  db: D1Database,
  m: { teamId: string; userId: string; left: boolean; now: number },
  audit?: AuditEvent,
): Promise<{ removal: Removal; tokenHashes: string[]; deviceIds: string[] } | null> {
  // The rest only once the membership went: a refused removal must change nothing.
  const gone = "NOT EXISTS (SELECT 1 FROM memberships WHERE team_id = ?1 AND user_id = ?2)";
  const removedNow = {
    sql: `EXISTS (SELECT 1 FROM removed_members WHERE team_id = ?5 AND user_id = ?6 AND removed_at = ?7)
      AND NOT EXISTS (SELECT 1 FROM memberships WHERE team_id = ?5 AND user_id = ?6)`,
    binds: [m.teamId, m.userId, m.now],
    event: `json_set(?3,
      '$.detail.role', (SELECT role FROM removed_members WHERE team_id = ?5 AND user_id = ?6),
      '$.detail.revokedKeys', (SELECT COUNT(*) FROM api_keys WHERE team_id = ?5 AND user_id = ?6 AND revoked_at >= ?7))`,
  };
  const [record, removed, sessions, devices] = await db.batch<{ role?: Role; token_hash?: string; id?: string }>([
    db
      .prepare(
        `INSERT OR REPLACE INTO removed_members (team_id, user_id, role, left_team, removed_at)
         SELECT team_id, user_id, role, ?4, ?5 FROM memberships WHERE team_id = ?1 AND user_id = ?2 AND ${KEEPS_AN_OWNER}
         RETURNING role`,
      )
      .bind(m.teamId, m.userId, "none", m.left ? 1 : 0, m.now),
    db
      .prepare(`DELETE FROM memberships WHERE team_id = ?1 AND user_id = ?2 AND ${KEEPS_AN_OWNER} RETURNING user_id`)
      .bind(m.teamId, m.userId, "none"),
    db
      .prepare(`DELETE FROM web_sessions WHERE team_id = ?1 AND user_id = ?2 AND ${gone} RETURNING token_hash`)
      .bind(m.teamId, m.userId),
    db
      .prepare(`DELETE FROM devices WHERE team_id = ?1 AND user_id = ?2 AND ${gone} RETURNING id`)
      .bind(m.teamId, m.userId),
    db
      .prepare(
        `UPDATE api_keys SET revoked_at = ?3 WHERE team_id = ?1 AND user_id = ?2 AND revoked_at IS NULL AND ${gone}`,
      )
      .bind(m.teamId, m.userId, m.now),
    ...auditOutboxStatements(db, audit, removedNow),
  ]);
  const role = record?.results[0]?.role;
  if (!removed?.results.length || !role) return null;
  return {
    removal: { role, left: m.left, removedAt: m.now },
    tokenHashes: (sessions?.results ?? []).map((r) => r.token_hash as string),
    deviceIds: (devices?.results ?? []).map((r) => r.id as string),
  };
}

/** The last removal of a user who is no longer a member of the team, or null. */
export async function findRemoval(db: D1Database, teamId: string, userId: string): Promise<Removal | null> {
  const row = await db
    .prepare(
      `SELECT r.role, r.left_team, r.removed_at FROM removed_members r
        WHERE r.team_id = ?1 AND r.user_id = ?2
          AND NOT EXISTS (SELECT 1 FROM memberships WHERE team_id = ?1 AND user_id = ?2)`,
    )
    .bind(teamId, userId)
    .first<{ role: Role; left_team: number; removed_at: number }>();
  return row && { role: row.role, left: row.left_team === 1, removedAt: row.removed_at };
}

/** The keys a removal revoked (revoked at or after it): each is told to its sessions again on a retry. */
export async function keysRevokedByRemoval(
  db: D1Database,
  r: { teamId: string; userId: string; removedAt: number },
): Promise<string[]> {
  const { results } = await db
    .prepare("SELECT id FROM api_keys WHERE team_id = ? AND user_id = ? AND revoked_at >= ?")
    .bind(r.teamId, r.userId, r.removedAt)
    .all<{ id: string }>();
  return results.map((k) => k.id);
}

// ── invites ─────────────────────────────────────────────────────────────────

export interface InviteRow {
  id: string;
  role: Role;
  email: string | null;
  createdAt: number;
  expiresAt: number;
  createdBy: { userId: string; name: string };
}

export async function createInvite(
  db: D1Database,
  i: {
    id: string;
    teamId: string;
    tokenHash: string;
    role: Role;
    email: string | null;
    createdBy: string;
    now: number;
    ttlMs: number;
  },
  audit?: AuditEvent,
): Promise<void> {
  await db.batch([
    db
      .prepare(
        `INSERT INTO invites (id, team_id, token_hash, role, email, created_by, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .bind(i.id, i.teamId, i.tokenHash, i.role, i.email, i.createdBy, i.now, i.now + i.ttlMs),
    ...auditOutboxStatements(db, audit),
  ]);
}

/** A role's rank in SQL, as `roleRank` has it. */
const rankOf = (column: string) =>
  `CASE ${column} ${ROLES.map((r) => `WHEN '${r}' THEN ${roleRank(r)}`).join(" ")} ELSE 0 END`;

/**
 * An invite carries its maker's authority only while they have it: the maker is still an
 * administrator of the team, of a rank no lower than the invite's role. Otherwise it is dead.
 */
const MAKER_MAY_GRANT = `EXISTS (SELECT 1 FROM memberships mk
   WHERE mk.team_id = i.team_id AND mk.user_id = i.created_by
     AND mk.role IN (${ADMIN_ROLES.map((r) => `'${r}'`).join(", ")}) AND ${rankOf("mk.role")} >= ${rankOf("i.role")})`;

const PENDING_INVITE = `i.used_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > ?2 AND ${MAKER_MAY_GRANT}`;

/** An invite with an address is for the user with that address only. */
const FOR_USER = "(i.email IS NULL OR i.email = (SELECT lower(u.email) FROM users u WHERE u.id = ?3))";

export async function listInvites(db: D1Database, teamId: string, now: number): Promise<InviteRow[]> {
  const { results } = await db
    .prepare(
      `SELECT i.id, i.role, i.email, i.created_at AS createdAt, i.expires_at AS expiresAt,
              i.created_by AS userId, u.name
         FROM invites i JOIN users u ON u.id = i.created_by
        WHERE i.team_id = ?1 AND ${PENDING_INVITE} ORDER BY i.created_at DESC`,
    )
    .bind(teamId, now)
    .all<Omit<InviteRow, "createdBy"> & { userId: string; name: string }>();
  return results.map(({ userId, name, ...i }) => ({ ...i, createdBy: { userId, name } }));
}

/** Revokes a pending invite; false when none is pending by that id. `audit` is queued with it, only if revoked. */
export async function revokeInvite(
  db: D1Database,
  r: { teamId: string; id: string; now: number },
  audit?: AuditEvent,
): Promise<boolean> {
  const revokedNow = {
    sql: "EXISTS (SELECT 1 FROM invites WHERE id = ?5 AND team_id = ?6 AND revoked_at = ?7)",
    binds: [r.id, r.teamId, r.now],
  };
  const [revoked] = await db.batch([
    db
      .prepare(`UPDATE invites AS i SET revoked_at = ?2 WHERE i.id = ?3 AND i.team_id = ?1 AND ${PENDING_INVITE}`)
      .bind(r.teamId, r.now, r.id),
    ...auditOutboxStatements(db, audit, revokedNow),
  ]);
  return (revoked?.meta.changes ?? 0) > 0;
}

export interface InvitePreview {
  team: { name: string };
  role: Role;
  invitedBy: { name: string };
  expiresAt: number;
}

export async function previewInvite(db: D1Database, tokenHash: string, now: number): Promise<InvitePreview | null> {
  const row = await db
    .prepare(
      `SELECT t.name AS teamName, i.role, u.name AS inviter, i.expires_at AS expiresAt
         FROM invites i JOIN teams t ON t.id = i.team_id JOIN users u ON u.id = i.created_by
        WHERE i.token_hash = ?1 AND ${PENDING_INVITE}`,
    )
    .bind(tokenHash, now)
    .first<{ teamName: string; role: Role; inviter: string; expiresAt: number }>();
  return (
    row && { team: { name: row.teamName }, role: row.role, invitedBy: { name: row.inviter }, expiresAt: row.expiresAt }
  );
}

export type InviteAcceptance =
  | { outcome: "joined"; inviteId: string; teamId: string; role: Role }
  | { outcome: "already_member" | "other_address" | "invalid" | "team_full" };

/**
 * Uses the invite up and adds the user with its role, in one batch: the token is consumed only
 * by someone not yet in the team (with the invite's address, if it has one), and the membership
 * is made only by the statement that consumed it, so a link works once even under races. `audit`
 * builds the event from the invite (its id, team and role never change, so they are read first)
 * and is queued in the same batch, only if this call used the invite up.
 */
export async function acceptInvite(
  db: D1Database,
  a: { tokenHash: string; userId: string; now: number; memberCeiling: number },
  audit?: (invite: { inviteId: string; teamId: string; role: Role }) => AuditEvent,
): Promise<InviteAcceptance> {
  const invite = await db
    .prepare("SELECT id AS inviteId, team_id AS teamId, role FROM invites WHERE token_hash = ?")
    .bind(a.tokenHash)
    .first<{ inviteId: string; teamId: string; role: Role }>();
  const usedNow = {
    sql: "EXISTS (SELECT 1 FROM invites WHERE id = ?5 AND used_by = ?6 AND used_at = ?7)",
    binds: [invite?.inviteId ?? null, a.userId, a.now],
  };
  const [consumed, , pending] = await db.batch<{
    id?: string;
    team_id?: string;
    role?: Role;
    mine?: number;
    member?: number;
  }>([
    db
      .prepare(
        `UPDATE invites AS i SET used_at = ?2, used_by = ?3
          WHERE i.token_hash = ?1 AND ${PENDING_INVITE} AND ${FOR_USER}
            AND NOT EXISTS (SELECT 1 FROM memberships m WHERE m.team_id = i.team_id AND m.user_id = ?3)
            AND (SELECT COUNT(*) FROM memberships m WHERE m.team_id = i.team_id) < ?4
         RETURNING id, team_id, role`,
      )
      .bind(a.tokenHash, a.now, a.userId, a.memberCeiling),
    db
      .prepare(
        `INSERT INTO memberships (team_id, user_id, role, created_at)
         SELECT team_id, ?3, role, ?2 FROM invites WHERE token_hash = ?1 AND used_by = ?3 AND used_at = ?2
         ON CONFLICT DO NOTHING`,
      )
      .bind(a.tokenHash, a.now, a.userId),
    db
      .prepare(
        `SELECT i.id, ${FOR_USER} AS mine,
                EXISTS (SELECT 1 FROM memberships m WHERE m.team_id = i.team_id AND m.user_id = ?3) AS member
           FROM invites i WHERE i.token_hash = ?1 AND ${PENDING_INVITE}`,
      )
      .bind(a.tokenHash, a.now, a.userId),
    ...auditOutboxStatements(db, invite ? audit?.(invite) : undefined, usedNow),
  ]);
  const row = consumed?.results[0];
  if (row)
    return { outcome: "joined", inviteId: row.id as string, teamId: row.team_id as string, role: row.role as Role };
  const live = pending?.results[0];
  if (!live) return { outcome: "invalid" };
  if (!live.mine) return { outcome: "other_address" };
  // A live invite for this person, not used: they are in the team already, or it is full.
  return live.member ? { outcome: "already_member" } : { outcome: "team_full" };
}
