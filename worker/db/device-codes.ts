/** D1 access: device codes (`tapgate login`). */
import type { AuditEvent } from "../audit-chain";
import { auditOutboxStatements } from "./audit";
import { countedKeys } from "./keys";

export type DeviceCodeStatus = "pending" | "approved" | "denied" | "consumed";

export interface DeviceCode {
  id: string;
  userCode: string;
  clientName: string;
  /** The requester's IPv4 /24 or IPv6 /48 (`203.0.113.0/24`), never the full address. */
  clientNetwork: string | null;
  /** Cloudflare's country guess for the requester (`NL`). */
  clientCountry: string | null;
  createdAt: number;
  expiresAt: number;
  status: DeviceCodeStatus;
  /** The team of whoever approved or denied it; null while pending. */
  teamId: string | null;
}

const DEVICE_CODE_COLUMNS = `id, user_code AS userCode, client_name AS clientName,
  client_network AS clientNetwork, client_country AS clientCountry, created_at AS createdAt,
  expires_at AS expiresAt, status, team_id AS teamId`;

/** Rows are kept a while after expiry so the rate limit and late polls still see them. */
const DEVICE_CODE_KEEP_MS = 60 * 60 * 1000;

/**
 * Stores a new code unless its IP has asked for `limit` codes within `windowMs`. The count and the
 * insert are one statement, so parallel requests cannot overshoot the limit.
 */
export async function createDeviceCode(
  db: D1Database,
  d: {
    id: string;
    deviceCodeHash: string;
    userCode: string;
    clientName: string;
    clientNetwork: string | null;
    clientCountry: string | null;
    ipHash: string;
    now: number;
    ttlMs: number;
    limit: number;
    windowMs: number;
  },
): Promise<{ created: true } | { created: false; retryAfterMs: number | null }> {
  const [, inserted] = await db.batch([
    db.prepare("DELETE FROM device_codes WHERE expires_at < ?").bind(d.now - DEVICE_CODE_KEEP_MS),
    db
      .prepare(
        `INSERT INTO device_codes (id, device_code_hash, user_code, client_name, ip_hash, created_at, expires_at,
                                   client_network, client_country)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?10, ?11
          WHERE (SELECT COUNT(*) FROM device_codes WHERE ip_hash = ?5 AND created_at > ?6 - ?8) < ?9
         ON CONFLICT DO NOTHING
         RETURNING id`,
      )
      .bind(
        d.id,
        d.deviceCodeHash,
        d.userCode,
        d.clientName,
        d.ipHash,
        d.now,
        d.now + d.ttlMs,
        d.windowMs,
        d.limit,
        d.clientNetwork,
        d.clientCountry,
      ),
  ]);
  if (inserted?.results.length) return { created: true };
  // Not inserted: either the IP is over its limit, or (rarely) the user code is taken.
  const recent = await db
    .prepare("SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM device_codes WHERE ip_hash = ? AND created_at > ?")
    .bind(d.ipHash, d.now - d.windowMs)
    .first<{ n: number; oldest: number | null }>();
  if (!recent || recent.n < d.limit) return { created: false, retryAfterMs: null };
  return { created: false, retryAfterMs: (recent.oldest ?? d.now) + d.windowMs - d.now };
}

/** Codes a team may see: pending ones (they belong to no team yet) and those it decided itself. */
const VISIBLE_DEVICE_CODE = "user_code = ?1 AND expires_at > ?2 AND (team_id IS NULL OR team_id = ?3)";

/** A code that has not expired, by its user code, if `teamId` may see it. */
export async function findDeviceCode(
  db: D1Database,
  q: { userCode: string; teamId: string; now: number },
): Promise<DeviceCode | null> {
  return db
    .prepare(`SELECT ${DEVICE_CODE_COLUMNS} FROM device_codes WHERE ${VISIBLE_DEVICE_CODE}`)
    .bind(q.userCode, q.now, q.teamId)
    .first<DeviceCode>();
}

export type DeviceCodeLookup =
  | { outcome: "found"; code: DeviceCode }
  | { outcome: "unknown" }
  | { outcome: "limited"; retryAfterMs: number };

/**
 * A signed-in user's lookup of a typed code, allowed only while they have missed fewer than
 * `limit` codes within `windowMs` (RFC 8628 §5.1: user codes are short enough to guess). Once
 * limited, even a right code is refused. The count, the lookup and recording a miss are one
 * transaction, so parallel guesses cannot overshoot the limit. Another team's decided code is a
 * miss, exactly like an unknown one.
 */
export async function lookupDeviceCode(
  db: D1Database,
  q: { userCode: string; userId: string; teamId: string; now: number; limit: number; windowMs: number },
): Promise<DeviceCodeLookup> {
  const underLimit = "(SELECT COUNT(*) FROM device_code_misses WHERE user_id = ?4 AND at > ?2 - ?5) < ?6";
  const [, misses, found] = await db.batch<Record<string, unknown>>([
    db.prepare("DELETE FROM device_code_misses WHERE at <= ?").bind(q.now - q.windowMs),
    db
      .prepare("SELECT COUNT(*) AS n, MIN(at) AS oldest FROM device_code_misses WHERE user_id = ? AND at > ?")
      .bind(q.userId, q.now - q.windowMs),
    db
      .prepare(`SELECT ${DEVICE_CODE_COLUMNS} FROM device_codes WHERE ${VISIBLE_DEVICE_CODE} AND ${underLimit}`)
      .bind(q.userCode, q.now, q.teamId, q.userId, q.windowMs, q.limit),
    db
      .prepare(
        `INSERT INTO device_code_misses (user_id, at) SELECT ?4, ?2
          WHERE ${underLimit} AND NOT EXISTS (SELECT 1 FROM device_codes WHERE ${VISIBLE_DEVICE_CODE})`,
      )
      .bind(q.userCode, q.now, q.teamId, q.userId, q.windowMs, q.limit),
  ]);
  const count = misses?.results[0] as { n: number; oldest: number | null } | undefined;
  if (count && count.n >= q.limit) {
    return { outcome: "limited", retryAfterMs: (count.oldest ?? q.now) + q.windowMs - q.now };
  }
  const code = found?.results[0] as DeviceCode | undefined;
  return code ? { outcome: "found", code } : { outcome: "unknown" };
}

/**
 * Approves or denies the pending, unexpired code `id` (typed as `userCode`) for the deciding
 * user's team; null if it was not pending. `audit` is queued in the same batch, only if decided.
 */
export async function decideDeviceCode(
  db: D1Database,
  d: { id: string; userCode: string; decision: "approved" | "denied"; userId: string; teamId: string; now: number },
  audit?: AuditEvent,
): Promise<DeviceCode | null> {
  const decidedNow = {
    sql: "EXISTS (SELECT 1 FROM device_codes WHERE id = ?5 AND status = ?6 AND team_id = ?7 AND decided_at = ?8)",
    binds: [d.id, d.decision, d.teamId, d.now],
  };
  const [decided] = await db.batch<DeviceCode>([
    db
      .prepare(
        `UPDATE device_codes SET status = ?2, user_id = ?3, team_id = ?4, decided_at = ?5
          WHERE user_code = ?1 AND id = ?6 AND status = 'pending' AND expires_at > ?5
          RETURNING ${DEVICE_CODE_COLUMNS}`,
      )
      .bind(d.userCode, d.decision, d.userId, d.teamId, d.now, d.id),
    ...auditOutboxStatements(db, audit, decidedNow),
  ]);
  return decided?.results[0] ?? null;
}

/** Who approved a code, in which team, for which client: fixed once approved. */
export interface ApprovedCode {
  teamId: string;
  userId: string;
  clientName: string;
}

export type DeviceExchange =
  | {
      outcome: "issued";
      clientName: string;
      team: { id: string; name: string };
      user: { id: string; name: string; email: string };
    }
  | { outcome: "authorization_pending" | "slow_down" | "expired_token" | "access_denied" | "over_ceiling" };

/**
 * One poll of the terminal. An approved code is consumed and its key created in the same
 * transaction: the key row exists exactly when this call consumed the code (tagged with the new
 * key's id), so a code yields at most one key even under parallel polls. The key belongs to the
 * approver, in the approver's team, and only while they are still a member of it. `audit`
 * builds the key's event from the approval, read first; the code is consumed only as that
 * approval stands (one approved meanwhile waits for the next poll), and the event is queued in
 * the same batch, only if the key was made.
 */
export async function exchangeDeviceCode(
  db: D1Database,
  x: {
    deviceCodeHash: string;
    key: { id: string; hash: string; prefix: string };
    now: number;
    minIntervalMs: number;
    /** The team's key ceiling: the code is consumed only while the team has fewer keys (`countedKeys`). */
    keyCeiling: number;
  },
  audit?: (approved: ApprovedCode) => AuditEvent,
): Promise<DeviceExchange> {
  const approved = await db
    .prepare(
      `SELECT team_id AS teamId, user_id AS userId, client_name AS clientName FROM device_codes
        WHERE device_code_hash = ? AND status = 'approved'`,
    )
    .bind(x.deviceCodeHash)
    .first<ApprovedCode>();
  const keyMade = { sql: "EXISTS (SELECT 1 FROM api_keys WHERE id = ?5)", binds: [x.key.id] };
  const [consumed, inserted, polled, current] = await db.batch<Record<string, unknown>>([
    db
      .prepare(
        `UPDATE device_codes SET status = 'consumed', key_id = ?2, last_polled_at = ?3
          WHERE device_code_hash = ?1 AND status = 'approved' AND expires_at > ?3 AND team_id = ?4 AND user_id = ?5
            AND ${countedKeys("?4", "?3")} < ?6
          RETURNING id`,
      )
      .bind(x.deviceCodeHash, x.key.id, x.now, approved?.teamId ?? null, approved?.userId ?? null, x.keyCeiling),
    db
      .prepare(
        `INSERT INTO api_keys (id, team_id, user_id, key_hash, prefix, label, created_at)
         SELECT d.key_id, d.team_id, d.user_id, ?3, ?4, d.client_name, ?5
           FROM device_codes d JOIN memberships m ON m.team_id = d.team_id AND m.user_id = d.user_id
          WHERE d.device_code_hash = ?1 AND d.key_id = ?2`,
      )
      .bind(x.deviceCodeHash, x.key.id, x.key.hash, x.key.prefix, x.now),
    db
      .prepare(
        `UPDATE device_codes SET last_polled_at = ?2
          WHERE device_code_hash = ?1 AND status <> 'consumed'
            AND (last_polled_at IS NULL OR last_polled_at <= ?2 - ?3)
          RETURNING id`,
      )
      .bind(x.deviceCodeHash, x.now, x.minIntervalMs),
    db
      .prepare(
        `SELECT d.status, d.expires_at, d.client_name, d.team_id, t.name AS team_name,
                d.user_id, u.name AS user_name, u.email, ${countedKeys("d.team_id", "?2")} AS keys
           FROM device_codes d LEFT JOIN teams t ON t.id = d.team_id LEFT JOIN users u ON u.id = d.user_id
          WHERE d.device_code_hash = ?1`,
      )
      .bind(x.deviceCodeHash, x.now),
    ...auditOutboxStatements(db, approved ? audit?.(approved) : undefined, keyMade),
  ]);
  const row = current?.results[0] as
    | {
        status: DeviceCodeStatus;
        expires_at: number;
        client_name: string;
        team_id: string;
        team_name: string;
        user_id: string;
        user_name: string;
        email: string;
        keys: number;
      }
    | undefined;
  if (consumed?.results.length && row) {
    // Consumed but no key: the approver left the team in between. The code is spent either way.
    if (!inserted?.meta.changes) return { outcome: "access_denied" };
    return {
      outcome: "issued",
      clientName: row.client_name,
      team: { id: row.team_id, name: row.team_name },
      user: { id: row.user_id, name: row.user_name, email: row.email },
    };
  }
  if (!row || row.status === "consumed" || row.expires_at <= x.now) return { outcome: "expired_token" };
  if (row.status === "denied") return { outcome: "access_denied" };
  // Approved, but the team has as many keys as the server allows: the code waits for one to be revoked.
  if (row.status === "approved" && row.keys >= x.keyCeiling) return { outcome: "over_ceiling" };
  if (!polled?.results.length) return { outcome: "slow_down" };
  return { outcome: "authorization_pending" };
}
