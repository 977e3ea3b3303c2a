/** D1 access: push devices (the TeamHub keeps a copy; D1 is the record). */

import type { Role } from "../../sdk/src/human/roles";
import { newId } from "../crypto";

export interface DeviceRow {
  id: string;
  userId: string;
  name: string;
  endpoint: string;
  p256dh: string;
  auth: string;
  createdAt: number;
  lastSeenAt: number;
}

const DEVICE_COLUMNS = `id, user_id AS userId, name, endpoint, p256dh, auth, created_at AS createdAt,
  last_seen_at AS lastSeenAt`;

/**
 * Saves a subscription for this user: the same endpoint updates its row; a new one is refused
 * past `limit` devices. Returns null when the limit is reached.
 */
export async function saveDevice(
  db: D1Database,
  d: {
    teamId: string;
    userId: string;
    name: string;
    endpoint: string;
    p256dh: string;
    auth: string;
    userAgent: string;
    now: number;
    limit: number;
  },
): Promise<DeviceRow | null> {
  const existing = await db
    .prepare("SELECT id FROM devices WHERE team_id = ? AND user_id = ? AND endpoint = ?")
    .bind(d.teamId, d.userId, d.endpoint)
    .first<{ id: string }>();
  const id = existing?.id ?? newId("dev");
  const saved = await db
    .prepare(
      `INSERT INTO devices (id, team_id, user_id, name, endpoint, p256dh, auth, user_agent, created_at, last_seen_at)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9
        WHERE ?10 OR (SELECT COUNT(*) FROM devices WHERE team_id = ?2 AND user_id = ?3) < ?11
       ON CONFLICT (id) DO UPDATE SET name = excluded.name, p256dh = excluded.p256dh, auth = excluded.auth,
              user_agent = excluded.user_agent, last_seen_at = excluded.last_seen_at
       RETURNING ${DEVICE_COLUMNS}`,
    )
    .bind(id, d.teamId, d.userId, d.name, d.endpoint, d.p256dh, d.auth, d.userAgent, d.now, existing ? 1 : 0, d.limit)
    .first<DeviceRow>();
  return saved ?? null;
}

/** The device answered (its service worker reported a push): it is alive. */
export async function touchDevice(
  db: D1Database,
  teamId: string,
  userId: string,
  deviceId: string,
  now: number,
): Promise<void> {
  await db
    .prepare("UPDATE devices SET last_seen_at = ? WHERE id = ? AND team_id = ? AND user_id = ?")
    .bind(now, deviceId, teamId, userId)
    .run();
}

export async function listDevices(db: D1Database, teamId: string, userId: string): Promise<DeviceRow[]> {
  const { results } = await db
    .prepare(`SELECT ${DEVICE_COLUMNS} FROM devices WHERE team_id = ? AND user_id = ? ORDER BY created_at`)
    .bind(teamId, userId)
    .all<DeviceRow>();
  return results;
}

/** Deletes one device; with `userId`, only if it is that user's. Returns whether a row went. */
export async function deleteDevice(
  db: D1Database,
  teamId: string,
  deviceId: string,
  userId?: string,
): Promise<boolean> {
  const { meta } = await db
    .prepare("DELETE FROM devices WHERE id = ?1 AND team_id = ?2 AND (?3 IS NULL OR user_id = ?3)")
    .bind(deviceId, teamId, userId ?? null)
    .run();
  return meta.changes > 0;
}

/** The team's devices and roles, for the TeamHub's own copy. */
export async function listTeamDirectory(
  db: D1Database,
  teamId: string,
): Promise<{ devices: DeviceRow[]; members: Array<{ userId: string; role: Role; name: string }> }> {
  const [devices, members] = await db.batch<DeviceRow & { userId: string; role: Role }>([
    db.prepare(`SELECT ${DEVICE_COLUMNS} FROM devices WHERE team_id = ?`).bind(teamId),
    db
      .prepare(
        "SELECT m.user_id AS userId, m.role, u.name FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.team_id = ?",
      )
      .bind(teamId),
  ]);
  return { devices: devices?.results ?? [], members: members?.results ?? [] };
}
