/**
 * D1 access: device keys (migration 0038, `device_keys`), the public keys private requests are
 * sealed to, each with its passkey endorsement. Every query is scoped by the team from
 * authentication. Removing what a key stands on (its push device, its sign-in, its person's
 * membership, the passkey that endorsed it) removes the key by trigger, audited there.
 */

import type { Role } from "../../sdk/src/human/roles";
import type { DeviceKeyEndorsement } from "../../sdk/src/private/contract";
import type { AuditEvent } from "../audit-chain";
import { auditOutboxStatements } from "./audit";

export interface DeviceKeyRow {
  deviceId: string;
  userId: string;
  webSessionId: string;
  pushDeviceId: string | null;
  credentialId: string;
  publicKey: string;
  endorsement: DeviceKeyEndorsement;
  name: string;
  createdAt: number;
}

const COLUMNS = `device_id AS deviceId, user_id AS userId, web_session_id AS webSessionId,
  push_device_id AS pushDeviceId, credential_id AS credentialId, public_key AS publicKey, endorsement, name,
  created_at AS createdAt`;

type StoredRow = Omit<DeviceKeyRow, "endorsement"> & { endorsement: string };
const fromRow = (row: StoredRow): DeviceKeyRow => ({ ...row, endorsement: JSON.parse(row.endorsement) });

export type SaveDeviceKeyResult =
  | { saved: DeviceKeyRow }
  /** Another person in this team registered this key. */
  | { refused: "taken" }
  /** The push device named is not this person's in this team (or went meanwhile). */
  | { refused: "no_push_device" }
  /** The person holds `limit` keys in this team already. */
  | { refused: "too_many" };

/**
 * Saves a key for this person: the same key again replaces its row (its first `created_at`
 * stays); a new one is refused past `limit` keys per person per team. `audit` is queued in the
 * same batch, only if this very endorsement was stored.
 */
export async function saveDeviceKey(
  db: D1Database,
  k: Omit<DeviceKeyRow, "createdAt"> & { teamId: string; now: number; limit: number },
  audit: AuditEvent,
): Promise<SaveDeviceKeyResult> {
  const endorsement = JSON.stringify(k.endorsement);
  const stored = {
    sql: "EXISTS (SELECT 1 FROM device_keys WHERE team_id = ?5 AND device_id = ?6 AND user_id = ?7 AND endorsement = ?8)",
    binds: [k.teamId, k.deviceId, k.userId, endorsement],
  };
  const [saved] = await db.batch<StoredRow>([
    db
      .prepare(
        `INSERT INTO device_keys (team_id, device_id, user_id, web_session_id, push_device_id, credential_id, public_key,
                                  endorsement, name, created_at)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10
          WHERE (?5 IS NULL OR EXISTS (SELECT 1 FROM devices WHERE id = ?5 AND team_id = ?1 AND user_id = ?3))
            AND (SELECT COUNT(*) FROM device_keys WHERE team_id = ?1 AND user_id = ?3 AND device_id <> ?2) < ?11
         ON CONFLICT (team_id, device_id) DO UPDATE SET web_session_id = excluded.web_session_id,
                push_device_id = excluded.push_device_id, credential_id = excluded.credential_id,
                endorsement = excluded.endorsement, name = excluded.name
          WHERE device_keys.user_id = excluded.user_id
         RETURNING ${COLUMNS}`,
      )
      .bind(
        k.teamId,
        k.deviceId,
        k.userId,
        k.webSessionId,
        k.pushDeviceId,
        k.credentialId,
        k.publicKey,
        endorsement,
        k.name,
        k.now,
        k.limit,
      ),
    ...auditOutboxStatements(db, audit, stored),
  ]);
  const row = saved?.results[0];
  if (row) return { saved: fromRow(row) };
  return { refused: await whyNotSaved(db, k) };
}

/** Why `saveDeviceKey` stored nothing, read after it. */
async function whyNotSaved(
  db: D1Database,
  k: { teamId: string; deviceId: string; userId: string; pushDeviceId: string | null },
): Promise<"taken" | "no_push_device" | "too_many"> {
  const row = await db
    .prepare(
      `SELECT (SELECT user_id FROM device_keys WHERE team_id = ?1 AND device_id = ?2) AS owner,
              (?4 IS NULL OR EXISTS (SELECT 1 FROM devices WHERE id = ?4 AND team_id = ?1 AND user_id = ?3)) AS device`,
    )
    .bind(k.teamId, k.deviceId, k.userId, k.pushDeviceId)
    .first<{ owner: string | null; device: number }>();
  if (row?.owner && row.owner !== k.userId) return "taken";
  if (!row?.device) return "no_push_device";
  return "too_many";
}

/** The team's device keys, oldest first. */
export async function listDeviceKeys(db: D1Database, teamId: string): Promise<DeviceKeyRow[]> {
  const { results } = await db
    .prepare(`SELECT ${COLUMNS} FROM device_keys WHERE team_id = ? ORDER BY created_at, device_id`)
    .bind(teamId)
    .all<StoredRow>();
  return results.map(fromRow);
}

export async function findDeviceKey(db: D1Database, teamId: string, deviceId: string): Promise<DeviceKeyRow | null> {
  const row = await db
    .prepare(`SELECT ${COLUMNS} FROM device_keys WHERE team_id = ? AND device_id = ?`)
    .bind(teamId, deviceId)
    .first<StoredRow>();
  return row ? fromRow(row) : null;
}

/** Deletes one key of the team; `audit` is queued with it, only if deleted. Returns whether a row went. */
export async function deleteDeviceKey(
  db: D1Database,
  teamId: string,
  deviceId: string,
  audit: AuditEvent,
): Promise<boolean> {
  // Queued first, while the row it records the removal of is still there to check.
  const present = {
    sql: "EXISTS (SELECT 1 FROM device_keys WHERE team_id = ?5 AND device_id = ?6)",
    binds: [teamId, deviceId],
  };
  const results = await db.batch([
    ...auditOutboxStatements(db, audit, present),
    db
      .prepare("DELETE FROM device_keys WHERE team_id = ? AND device_id = ? RETURNING device_id")
      .bind(teamId, deviceId),
  ]);
  return (results.at(-1)?.results.length ?? 0) > 0;
}

/** A key an agent seals to, with its person's name as the team knows it now. */
export interface RecipientRow {
  userId: string;
  name: string;
  deviceId: string;
  publicKey: string;
  endorsement: DeviceKeyEndorsement;
}

/**
 * The keys of the team's members whose role is one of `roles`; with `onlyUserId`, that person's
 * alone. Oldest first.
 */
export async function listRecipientKeys(
  db: D1Database,
  teamId: string,
  roles: readonly Role[],
  onlyUserId: string | null,
): Promise<RecipientRow[]> {
  const { results } = await db
    .prepare(
      `SELECT k.user_id AS userId, u.name, k.device_id AS deviceId, k.public_key AS publicKey, k.endorsement
         FROM device_keys k
         JOIN memberships m ON m.team_id = k.team_id AND m.user_id = k.user_id
         JOIN users u ON u.id = k.user_id
        WHERE k.team_id = ?1 AND m.role IN (SELECT value FROM json_each(?2)) AND (?3 IS NULL OR k.user_id = ?3)
        ORDER BY k.created_at, k.device_id`,
    )
    .bind(teamId, JSON.stringify(roles), onlyUserId)
    .all<Omit<RecipientRow, "endorsement"> & { endorsement: string }>();
  return results.map((r) => ({ ...r, endorsement: JSON.parse(r.endorsement) }));
}
