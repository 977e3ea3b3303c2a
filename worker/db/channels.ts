/**
 * D1 access for outside channels: a team's installs (sealed config), its members' links to
 * platform accounts, and one-time link codes (hashed). Every function takes the team id from
 * authentication, except the lookups a platform's callback starts from (its workspace id, a code
 * hash), which answer the team they belong to.
 *
 * Owns: the SQL of migrations/0034_chanbase_channels.sql. Does not own: sealing (secret-box.ts),
 * code generation and expiry rules (`team/channel-links.ts`).
 */
import type { Channel } from "../../sdk/src/human/channels";
import type { Role } from "../../sdk/src/human/roles";

export interface ChannelInstallRow {
  teamId: string;
  channel: Channel;
  /** The Slack workspace id; null elsewhere. */
  externalId: string | null;
  /** Sealed JSON (`sealSecret`), never plaintext. */
  config: string;
  /** A Slack channel id the admin picked; null: direct messages. */
  target: string | null;
  createdBy: string;
  createdAt: number;
}

const INSTALL_COLUMNS = `team_id AS teamId, channel, external_id AS externalId, config, target,
  created_by AS createdBy, created_at AS createdAt`;

export async function getChannelInstall(
  db: D1Database,
  teamId: string,
  channel: Channel,
): Promise<ChannelInstallRow | null> {
  return db
    .prepare(`SELECT ${INSTALL_COLUMNS} FROM channel_installs WHERE team_id = ?1 AND channel = ?2`)
    .bind(teamId, channel)
    .first<ChannelInstallRow>();
}

export async function listChannelInstalls(db: D1Database, teamId: string): Promise<ChannelInstallRow[]> {
  const { results } = await db
    .prepare(`SELECT ${INSTALL_COLUMNS} FROM channel_installs WHERE team_id = ?1`)
    .bind(teamId)
    .all<ChannelInstallRow>();
  return results;
}

/** The install a platform's callback names (a Slack workspace id): it answers which team. */
export async function channelInstallByExternalId(
  db: D1Database,
  channel: Channel,
  externalId: string,
): Promise<ChannelInstallRow | null> {
  return db
    .prepare(`SELECT ${INSTALL_COLUMNS} FROM channel_installs WHERE channel = ?1 AND external_id = ?2`)
    .bind(channel, externalId)
    .first<ChannelInstallRow>();
}

/**
 * Connects (or reconnects) a channel for a team. A workspace already connected to another team
 * violates UNIQUE (channel, external_id): the error is the caller's to answer.
 */
export async function putChannelInstall(db: D1Database, row: ChannelInstallRow): Promise<void> {
  await db
    .prepare(
      `INSERT INTO channel_installs (team_id, channel, external_id, config, target, created_by, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
       ON CONFLICT (team_id, channel) DO UPDATE SET external_id = excluded.external_id, config = excluded.config,
         target = excluded.target, created_by = excluded.created_by, created_at = excluded.created_at`,
    )
    .bind(row.teamId, row.channel, row.externalId, row.config, row.target, row.createdBy, row.createdAt)
    .run();
}

/** Whether there was one to remove. */
export async function deleteChannelInstall(db: D1Database, teamId: string, channel: Channel): Promise<boolean> {
  const { meta } = await db
    .prepare("DELETE FROM channel_installs WHERE team_id = ?1 AND channel = ?2")
    .bind(teamId, channel)
    .run();
  return meta.changes > 0;
}

export interface ChannelLinkRow {
  teamId: string;
  userId: string;
  channel: Channel;
  externalUserId: string;
  /** Where to post to this member on the platform (a DM or chat id). */
  address: string;
  linkedAt: number;
}

const LINK_COLUMNS = `l.team_id AS teamId, l.user_id AS userId, l.channel, l.external_user_id AS externalUserId,
  l.address, l.linked_at AS linkedAt`;

/**
 * Links a member's platform account, replacing their earlier link on this channel and anyone
 * else's link of the same platform account in this team (the account belongs to one member).
 */
export async function putChannelLink(db: D1Database, row: ChannelLinkRow): Promise<void> {
  await db.batch([
    db
      .prepare("DELETE FROM channel_links WHERE team_id = ?1 AND channel = ?2 AND external_user_id = ?3")
      .bind(row.teamId, row.channel, row.externalUserId),
    db
      .prepare("DELETE FROM channel_removed_links WHERE team_id = ?1 AND channel = ?2 AND external_user_id = ?3")
      .bind(row.teamId, row.channel, row.externalUserId),
    db
      .prepare(
        `INSERT INTO channel_links (team_id, user_id, channel, external_user_id, address, linked_at)
           VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (team_id, user_id, channel) DO UPDATE SET external_user_id = excluded.external_user_id,
           address = excluded.address, linked_at = excluded.linked_at`,
      )
      .bind(row.teamId, row.userId, row.channel, row.externalUserId, row.address, row.linkedAt),
  ]);
}

export async function getChannelLink(
  db: D1Database,
  teamId: string,
  userId: string,
  channel: Channel,
): Promise<ChannelLinkRow | null> {
  return db
    .prepare(`SELECT ${LINK_COLUMNS} FROM channel_links l WHERE l.team_id = ?1 AND l.user_id = ?2 AND l.channel = ?3`)
    .bind(teamId, userId, channel)
    .first<ChannelLinkRow>();
}

/** The links of these members on `channel` (where a ladder step posts to them). */
export async function listChannelLinks(
  db: D1Database,
  teamId: string,
  channel: Channel,
  userIds: string[],
): Promise<ChannelLinkRow[]> {
  if (userIds.length === 0) return [];
  const { results } = await db
    .prepare(
      `SELECT ${LINK_COLUMNS} FROM channel_links l, json_each(?3) j
         WHERE l.team_id = ?1 AND l.channel = ?2 AND l.user_id = j.value ORDER BY l.user_id`,
    )
    .bind(teamId, channel, JSON.stringify(userIds))
    .all<ChannelLinkRow>();
  return results;
}

/** The member a platform account is linked to in this team, with their name and role now. */
export async function channelLinkMember(
  db: D1Database,
  teamId: string,
  channel: Channel,
  externalUserId: string,
): Promise<{ userId: string; name: string; role: Role } | null> {
  return db
    .prepare(
      `SELECT l.user_id AS userId, u.name, m.role
         FROM channel_links l
         JOIN memberships m ON m.team_id = l.team_id AND m.user_id = l.user_id
         JOIN users u ON u.id = l.user_id
        WHERE l.team_id = ?1 AND l.channel = ?2 AND l.external_user_id = ?3`,
    )
    .bind(teamId, channel, externalUserId)
    .first<{ userId: string; name: string; role: Role }>();
}

/** Whether this platform account was linked to a member who has left the team (and is not back). */
export async function channelLinkRemoved(
  db: D1Database,
  teamId: string,
  channel: Channel,
  externalUserId: string,
): Promise<boolean> {
  const row = await db
    .prepare(
      `SELECT 1 AS gone FROM channel_removed_links r
        WHERE r.team_id = ?1 AND r.channel = ?2 AND r.external_user_id = ?3
          AND NOT EXISTS (SELECT 1 FROM memberships m WHERE m.team_id = r.team_id AND m.user_id = r.user_id)`,
    )
    .bind(teamId, channel, externalUserId)
    .first<{ gone: number }>();
  return row !== null;
}

/** Whether there was one to remove. */
export async function deleteChannelLink(
  db: D1Database,
  teamId: string,
  userId: string,
  channel: Channel,
): Promise<boolean> {
  const { meta } = await db
    .prepare("DELETE FROM channel_links WHERE team_id = ?1 AND user_id = ?2 AND channel = ?3")
    .bind(teamId, userId, channel)
    .run();
  return meta.changes > 0;
}

export interface ChannelLinkCodeRow {
  codeHash: string;
  teamId: string;
  userId: string;
  channel: Channel;
  expiresAt: number;
}

/** Stores a member's new code, replacing any code they had for this channel. */
export async function putChannelLinkCode(db: D1Database, row: ChannelLinkCodeRow): Promise<void> {
  await db.batch([
    db
      .prepare("DELETE FROM channel_link_codes WHERE team_id = ?1 AND user_id = ?2 AND channel = ?3")
      .bind(row.teamId, row.userId, row.channel),
    db
      .prepare(
        "INSERT INTO channel_link_codes (code_hash, team_id, user_id, channel, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)",
      )
      .bind(row.codeHash, row.teamId, row.userId, row.channel, row.expiresAt),
  ]);
}

/**
 * Takes a code: deletes it and answers what it was for, or null (unknown, another channel's,
 * already taken). One statement, so two takers never both get it. Expiry is the caller's check.
 */
export async function takeChannelLinkCode(
  db: D1Database,
  channel: Channel,
  codeHash: string,
): Promise<ChannelLinkCodeRow | null> {
  return db
    .prepare(
      `DELETE FROM channel_link_codes WHERE code_hash = ?1 AND channel = ?2
         RETURNING code_hash AS codeHash, team_id AS teamId, user_id AS userId, channel, expires_at AS expiresAt`,
    )
    .bind(codeHash, channel)
    .first<ChannelLinkCodeRow>();
}
