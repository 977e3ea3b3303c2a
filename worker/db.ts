/**
 * All D1 access. Every function that reads or changes a team's rows takes the team id from
 * authentication as a parameter; nothing here trusts a team id from a request body.
 */
import { newId } from "./crypto";
import { parsePolicy, type TeamPolicy } from "./policy";
import type { AgentIdentity, Approval, ApprovalState, DecidedBy, Role, SessionInfo, WebIdentity } from "./types";

const WEB_SESSION_MS = 30 * 24 * 60 * 60 * 1000;

// ── people, teams, web sessions ─────────────────────────────────────────────

export async function findWebSession(db: D1Database, tokenHash: string, now: number): Promise<WebIdentity | null> {
  const row = await db
    .prepare(
      `SELECT s.user_id, u.email, u.name, s.team_id, t.name AS team_name, m.role
         FROM web_sessions s
         JOIN users u ON u.id = s.user_id
         JOIN memberships m ON m.user_id = s.user_id AND m.team_id = s.team_id
         JOIN teams t ON t.id = s.team_id
        WHERE s.token_hash = ? AND s.expires_at > ?`,
    )
    .bind(tokenHash, now)
    .first<{ user_id: string; email: string; name: string; team_id: string; team_name: string; role: Role }>();
  if (!row) return null;
  return {
    userId: row.user_id,
    email: row.email,
    name: row.name,
    teamId: row.team_id,
    teamName: row.team_name,
    role: row.role,
    tokenHash,
  };
}

export async function createWebSession(
  db: D1Database,
  s: { tokenHash: string; userId: string; teamId: string; method: string; now: number },
): Promise<void> {
  await db
    .prepare(
      `INSERT INTO web_sessions (token_hash, user_id, team_id, method, created_at, expires_at, last_seen_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(s.tokenHash, s.userId, s.teamId, s.method, s.now, s.now + WEB_SESSION_MS, s.now)
    .run();
}

export async function deleteWebSession(db: D1Database, tokenHash: string): Promise<void> {
  await db.prepare("DELETE FROM web_sessions WHERE token_hash = ?").bind(tokenHash).run();
}

export async function findUserByEmail(db: D1Database, email: string): Promise<{ id: string } | null> {
  return db.prepare("SELECT id FROM users WHERE email = ?").bind(email).first<{ id: string }>();
}

/** The team a user signs in to: the first they joined. */
export async function firstMembership(db: D1Database, userId: string): Promise<{ teamId: string } | null> {
  const row = await db
    .prepare("SELECT team_id FROM memberships WHERE user_id = ? ORDER BY created_at LIMIT 1")
    .bind(userId)
    .first<{ team_id: string }>();
  return row ? { teamId: row.team_id } : null;
}

export async function createUserWithTeam(
  db: D1Database,
  u: { email: string; name: string; teamName: string; now: number },
): Promise<{ userId: string; teamId: string }> {
  const userId = newId("usr");
  const teamId = newId("team");
  await db.batch([
    db
      .prepare("INSERT INTO users (id, email, name, created_at) VALUES (?, ?, ?, ?)")
      .bind(userId, u.email, u.name, u.now),
    db.prepare("INSERT INTO teams (id, name, created_at) VALUES (?, ?, ?)").bind(teamId, u.teamName, u.now),
    db
      .prepare("INSERT INTO memberships (team_id, user_id, role, created_at) VALUES (?, ?, 'owner', ?)")
      .bind(teamId, userId, u.now),
    auditStatement(db, {
      eventId: `team_created:${teamId}`,
      teamId,
      at: u.now,
      actor: `user:${userId}`,
      action: "team.created",
      subject: teamId,
    }),
  ]);
  return { userId, teamId };
}

export async function getTeamPolicy(db: D1Database, teamId: string): Promise<TeamPolicy> {
  const row = await db.prepare("SELECT policy FROM teams WHERE id = ?").bind(teamId).first<{ policy: string }>();
  return parsePolicy(row?.policy);
}

// ── sign-in links ───────────────────────────────────────────────────────────

export interface SignInLink {
  purpose: "signup" | "signin";
  email: string;
  name: string | null;
  team_name: string | null;
  /** A passkey made during passkey sign-up, stored once the link is confirmed. */
  passkey?: NewPasskey | null;
}

export async function createSignInLink(
  db: D1Database,
  l: SignInLink & { tokenHash: string; now: number; ttlMs: number },
): Promise<void> {
  await db
    .prepare(
      `INSERT INTO sign_in_links (token_hash, purpose, email, name, team_name, passkey, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(
      l.tokenHash,
      l.purpose,
      l.email,
      l.name,
      l.team_name,
      l.passkey ? JSON.stringify(l.passkey) : null,
      l.now,
      l.now + l.ttlMs,
    )
    .run();
}

/** Marks the link used and returns it, in one statement: a link works once, even under races. */
export async function consumeSignInLink(db: D1Database, tokenHash: string, now: number): Promise<SignInLink | null> {
  const row = await db
    .prepare(
      `UPDATE sign_in_links SET used_at = ?1
        WHERE token_hash = ?2 AND used_at IS NULL AND expires_at > ?1
        RETURNING purpose, email, name, team_name, passkey`,
    )
    .bind(now, tokenHash)
    .first<Omit<SignInLink, "passkey"> & { passkey: string | null }>();
  return row && { ...row, passkey: row.passkey ? (JSON.parse(row.passkey) as NewPasskey) : null };
}

// ── API keys ────────────────────────────────────────────────────────────────

export interface ApiKeyRow {
  id: string;
  label: string;
  prefix: string;
  userId: string;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

export async function createApiKey(
  db: D1Database,
  k: { id: string; teamId: string; userId: string; hash: string; prefix: string; label: string; now: number },
): Promise<void> {
  await db
    .prepare(
      `INSERT INTO api_keys (id, team_id, user_id, key_hash, prefix, label, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(k.id, k.teamId, k.userId, k.hash, k.prefix, k.label, k.now)
    .run();
}

export async function listApiKeys(db: D1Database, teamId: string, userId: string): Promise<ApiKeyRow[]> {
  const { results } = await db
    .prepare(
      `SELECT id, label, prefix, user_id AS userId, created_at AS createdAt,
              last_used_at AS lastUsedAt, revoked_at AS revokedAt
         FROM api_keys WHERE team_id = ? AND user_id = ? ORDER BY created_at DESC, id`,
    )
    .bind(teamId, userId)
    .all<ApiKeyRow>();
  return results;
}

/**
 * Revokes one of the user's keys and returns the sessions it opened (to deny and disconnect),
 * or null when no such live key exists in this team for this user.
 */
export async function revokeApiKey(
  db: D1Database,
  r: { teamId: string; userId: string; keyId: string; now: number },
): Promise<string[] | null> {
  const [revoked, sessions] = await db.batch<{ id?: string; session_id?: string }>([
    db
      .prepare(
        `UPDATE api_keys SET revoked_at = ? WHERE id = ? AND team_id = ? AND user_id = ? AND revoked_at IS NULL
         RETURNING id`,
      )
      .bind(r.now, r.keyId, r.teamId, r.userId),
    db.prepare("SELECT session_id FROM agent_session_keys WHERE key_id = ? AND team_id = ?").bind(r.keyId, r.teamId),
  ]);
  if (!revoked?.results.length) return null;
  return (sessions?.results ?? []).map((s) => s.session_id as string);
}

export async function findAgentKey(db: D1Database, keyHash: string): Promise<AgentIdentity | null> {
  const row = await db
    .prepare("SELECT id, user_id, team_id FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL")
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

// ── agent sessions ──────────────────────────────────────────────────────────

/**
 * Registers a key's connection to a session. The first key's user owns the session; a key of
 * another user gets `forbidden`. Also records the key→session link that revocation follows.
 */
export async function joinAgentSession(
  db: D1Database,
  a: AgentIdentity & { sessionId: string; now: number },
): Promise<"ok" | "forbidden"> {
  const [owner] = await db.batch<{ owner_user_id: string }>([
    db
      .prepare(
        `INSERT INTO agent_sessions (team_id, session_id, owner_user_id, connected_at, last_seen_at)
         VALUES (?1, ?2, ?3, ?4, ?4)
         ON CONFLICT (team_id, session_id) DO UPDATE SET last_seen_at = excluded.last_seen_at
         RETURNING owner_user_id`,
      )
      .bind(a.teamId, a.sessionId, a.userId, a.now),
    db
      .prepare(
        `INSERT INTO agent_session_keys (team_id, key_id, session_id)
         SELECT ?1, ?2, ?3 WHERE EXISTS
           (SELECT 1 FROM agent_sessions WHERE team_id = ?1 AND session_id = ?3 AND owner_user_id = ?4)
         ON CONFLICT DO NOTHING`,
      )
      .bind(a.teamId, a.keyId, a.sessionId, a.userId),
  ]);
  return owner?.results[0]?.owner_user_id === a.userId ? "ok" : "forbidden";
}

// ── approvals (index and history) ───────────────────────────────────────────

interface ApprovalRow {
  id: string;
  session_id: string;
  state: ApprovalState;
  reason: Approval["reason"];
  snapshot: string;
  options: string;
  request_hash: string;
  created_at: number;
  expires_at: number;
  resolved_at: number | null;
  option_id: string | null;
  decided_by: string | null;
}

function approvalFromRow(r: ApprovalRow): Approval {
  return {
    id: r.id,
    sessionId: r.session_id,
    state: r.state,
    reason: r.reason,
    snapshot: JSON.parse(r.snapshot),
    options: JSON.parse(r.options),
    requestHash: r.request_hash,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    resolvedAt: r.resolved_at,
    optionId: r.option_id,
    decidedBy: r.decided_by ? (JSON.parse(r.decided_by) as DecidedBy) : null,
  };
}

export interface ApprovalQuery {
  teamId: string;
  userId: string;
  state: "pending" | "resolved";
  scope: "mine" | "team";
  cursor: { createdAt: number; id: string } | null;
  limit: number;
}

/** Newest first; `cursor` is the last row of the previous page. */
export async function listApprovals(db: D1Database, q: ApprovalQuery): Promise<Approval[]> {
  const where = ["team_id = ?1", q.state === "pending" ? "state = 'pending'" : "state <> 'pending'"];
  if (q.scope === "mine") where.push("owner_user_id = ?2");
  if (q.cursor) where.push("(created_at < ?3 OR (created_at = ?3 AND id < ?4))");
  const { results } = await db
    .prepare(
      `SELECT * FROM approvals WHERE ${where.join(" AND ")}
        ORDER BY created_at DESC, id DESC LIMIT ?5`,
    )
    .bind(q.teamId, q.userId, q.cursor?.createdAt ?? 0, q.cursor?.id ?? "", q.limit)
    .all<ApprovalRow>();
  return results.map(approvalFromRow);
}

export async function getApprovalRecord(db: D1Database, teamId: string, id: string): Promise<Approval | null> {
  const row = await db
    .prepare("SELECT * FROM approvals WHERE id = ? AND team_id = ?")
    .bind(id, teamId)
    .first<ApprovalRow>();
  return row ? approvalFromRow(row) : null;
}

// ── writes replayed from a SessionGate outbox ───────────────────────────────

/** What a SessionGate hands to D1 after the agent has its answer. Replays are idempotent. */
export type OutboxOp =
  | { op: "approval"; teamId: string; ownerUserId: string; approval: Approval }
  | { op: "session"; teamId: string; sessionId: string; info: SessionInfo; connected: boolean; at: number }
  | {
      op: "audit";
      eventId: string;
      teamId: string;
      at: number;
      actor: string;
      action: string;
      subject: string;
      detail: unknown;
    };

export function outboxStatement(db: D1Database, o: OutboxOp): D1PreparedStatement {
  switch (o.op) {
    case "approval":
      return approvalUpsertStatement(db, o.teamId, o.ownerUserId, o.approval);
    case "session":
      return db
        .prepare(
          `UPDATE agent_sessions SET title = ?3, agent = ?4, host = ?5, cwd = ?6, last_seen_at = ?7,
                  connected_at = CASE WHEN ?8 THEN ?7 ELSE connected_at END,
                  disconnected_at = CASE WHEN ?8 THEN NULL ELSE ?7 END
            WHERE team_id = ?1 AND session_id = ?2`,
        )
        .bind(
          o.teamId,
          o.sessionId,
          o.info.title,
          o.info.agent ? JSON.stringify(o.info.agent) : null,
          o.info.host,
          o.info.cwd,
          o.at,
          o.connected ? 1 : 0,
        );
    case "audit":
      return auditStatement(db, o);
  }
}

/** Insert, or move a pending row to its terminal state; a terminal row never changes again. */
function approvalUpsertStatement(
  db: D1Database,
  teamId: string,
  ownerUserId: string,
  a: Approval,
): D1PreparedStatement {
  const toolCall = a.snapshot.toolCall as { title?: unknown; kind?: unknown };
  return db
    .prepare(
      `INSERT INTO approvals (id, team_id, session_id, owner_user_id, state, reason, snapshot, request_hash,
                              options, tool_title, tool_kind, created_at, expires_at, resolved_at, decided_by, option_id)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)
       ON CONFLICT (id) DO UPDATE SET state = excluded.state, reason = excluded.reason,
              resolved_at = excluded.resolved_at, decided_by = excluded.decided_by, option_id = excluded.option_id
        WHERE approvals.state = 'pending' AND approvals.team_id = excluded.team_id`,
    )
    .bind(
      a.id,
      teamId,
      a.sessionId,
      ownerUserId,
      a.state,
      a.reason,
      JSON.stringify(a.snapshot),
      a.requestHash,
      JSON.stringify(a.options),
      typeof toolCall.title === "string" ? toolCall.title : null,
      typeof toolCall.kind === "string" ? toolCall.kind : null,
      a.createdAt,
      a.expiresAt,
      a.resolvedAt,
      a.decidedBy ? JSON.stringify(a.decidedBy) : null,
      a.optionId,
    );
}

// ── audit log ───────────────────────────────────────────────────────────────

export interface AuditEvent {
  eventId: string;
  teamId: string;
  at: number;
  actor: string;
  action: string;
  subject: string;
  detail?: unknown;
}

export function auditStatement(db: D1Database, e: AuditEvent): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO audit_log (event_id, team_id, at, actor, action, subject, detail)
       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`,
    )
    .bind(e.eventId, e.teamId, e.at, e.actor, e.action, e.subject, JSON.stringify(e.detail ?? {}));
}

export async function audit(db: D1Database, e: AuditEvent): Promise<void> {
  await auditStatement(db, e).run();
}

// ── local mode outbox ───────────────────────────────────────────────────────

export interface DevMessage {
  to: string;
  subject: string;
  text: string;
  link: string | null;
  sentAt: number;
}

export async function saveDevMessage(db: D1Database, m: DevMessage): Promise<void> {
  await db
    .prepare("INSERT INTO dev_outbox (recipient, subject, body, link, sent_at) VALUES (?, ?, ?, ?, ?)")
    .bind(m.to, m.subject, m.text, m.link, m.sentAt)
    .run();
}

export async function listDevMessages(db: D1Database, to: string | undefined): Promise<DevMessage[]> {
  const { results } = await db
    .prepare(
      `SELECT "to", subject, text, link, sentAt FROM (
         SELECT seq, recipient AS "to", subject, body AS text, link, sent_at AS sentAt FROM dev_outbox
          WHERE ?1 IS NULL OR recipient = ?1 ORDER BY seq DESC LIMIT 500)
        ORDER BY seq`,
    )
    .bind(to ?? null)
    .all<DevMessage>();
  return results;
}

// ── device codes (`tapgate login`) ──────────────────────────────────────────

export type DeviceCodeStatus = "pending" | "approved" | "denied" | "consumed";

export interface DeviceCode {
  id: string;
  userCode: string;
  clientName: string;
  createdAt: number;
  expiresAt: number;
  status: DeviceCodeStatus;
  /** The team of whoever approved or denied it; null while pending. */
  teamId: string | null;
}

const DEVICE_CODE_COLUMNS = `id, user_code AS userCode, client_name AS clientName, created_at AS createdAt,
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
        `INSERT INTO device_codes (id, device_code_hash, user_code, client_name, ip_hash, created_at, expires_at)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7
          WHERE (SELECT COUNT(*) FROM device_codes WHERE ip_hash = ?5 AND created_at > ?6 - ?8) < ?9
         ON CONFLICT DO NOTHING
         RETURNING id`,
      )
      .bind(d.id, d.deviceCodeHash, d.userCode, d.clientName, d.ipHash, d.now, d.now + d.ttlMs, d.windowMs, d.limit),
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

/** A code that has not expired, by its user code (any team: a pending code belongs to no team yet). */
export async function findDeviceCode(db: D1Database, userCode: string, now: number): Promise<DeviceCode | null> {
  return db
    .prepare(`SELECT ${DEVICE_CODE_COLUMNS} FROM device_codes WHERE user_code = ? AND expires_at > ?`)
    .bind(userCode, now)
    .first<DeviceCode>();
}

/** Approves or denies a pending, unexpired code for the deciding user's team; null if it was not pending. */
export async function decideDeviceCode(
  db: D1Database,
  d: { userCode: string; decision: "approved" | "denied"; userId: string; teamId: string; now: number },
): Promise<DeviceCode | null> {
  return db
    .prepare(
      `UPDATE device_codes SET status = ?2, user_id = ?3, team_id = ?4, decided_at = ?5
        WHERE user_code = ?1 AND status = 'pending' AND expires_at > ?5
        RETURNING ${DEVICE_CODE_COLUMNS}`,
    )
    .bind(d.userCode, d.decision, d.userId, d.teamId, d.now)
    .first<DeviceCode>();
}

export type DeviceExchange =
  | {
      outcome: "issued";
      clientName: string;
      team: { id: string; name: string };
      user: { id: string; name: string; email: string };
    }
  | { outcome: "authorization_pending" | "slow_down" | "expired_token" | "access_denied" };

/**
 * One poll of the terminal. An approved code is consumed and its key created in the same
 * transaction: the key row exists exactly when this call consumed the code (tagged with the new
 * key's id), so a code yields at most one key even under parallel polls. The key belongs to the
 * approver, in the approver's team, and only while they are still a member of it.
 */
export async function exchangeDeviceCode(
  db: D1Database,
  x: {
    deviceCodeHash: string;
    key: { id: string; hash: string; prefix: string };
    now: number;
    minIntervalMs: number;
  },
): Promise<DeviceExchange> {
  const [consumed, inserted, polled, current] = await db.batch<Record<string, unknown>>([
    db
      .prepare(
        `UPDATE device_codes SET status = 'consumed', key_id = ?2, last_polled_at = ?3
          WHERE device_code_hash = ?1 AND status = 'approved' AND expires_at > ?3
          RETURNING id`,
      )
      .bind(x.deviceCodeHash, x.key.id, x.now),
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
                d.user_id, u.name AS user_name, u.email
           FROM device_codes d LEFT JOIN teams t ON t.id = d.team_id LEFT JOIN users u ON u.id = d.user_id
          WHERE d.device_code_hash = ?1`,
      )
      .bind(x.deviceCodeHash),
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
  if (!polled?.results.length) return { outcome: "slow_down" };
  return { outcome: "authorization_pending" };
}

// ── push devices (the TeamHub keeps a copy; D1 is the record) ─────────────────

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
): Promise<{ devices: DeviceRow[]; members: Array<{ userId: string; role: Role }> }> {
  const [devices, members] = await db.batch<DeviceRow & { userId: string; role: Role }>([
    db.prepare(`SELECT ${DEVICE_COLUMNS} FROM devices WHERE team_id = ?`).bind(teamId),
    db.prepare("SELECT user_id AS userId, role FROM memberships WHERE team_id = ?").bind(teamId),
  ]);
  return { devices: devices?.results ?? [], members: members?.results ?? [] };
}

// ── passkeys and pairing ────────────────────────────────────────────────────

/** Rows past their expiry are swept when new ones are made; used rows are kept until then. */
function sweepExpired(db: D1Database, table: "webauthn_challenges" | "pairing_tokens", now: number) {
  return db.prepare(`DELETE FROM ${table} WHERE expires_at < ?`).bind(now);
}

export interface SignupDetails {
  email: string;
  name: string;
  team: string;
}

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

/** Stores a passkey for a user and audits it in their team; false if that credential id exists. */
export async function addPasskey(
  db: D1Database,
  p: { passkey: NewPasskey; userId: string; teamId: string; now: number },
): Promise<boolean> {
  const { passkey: k } = p;
  const inserted = await db
    .prepare(
      `INSERT INTO passkey_credentials (id, user_id, public_key, counter, transports, device_name, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING id`,
    )
    .bind(k.id, p.userId, k.publicKey, k.counter, JSON.stringify(k.transports), k.deviceName, p.now)
    .first();
  if (!inserted) return false;
  await audit(db, {
    eventId: `passkey_added:${k.id}:${p.now}`,
    teamId: p.teamId,
    at: p.now,
    actor: `user:${p.userId}`,
    action: "passkey.added",
    subject: p.userId,
    detail: { credentialId: k.id, deviceName: k.deviceName },
  });
  return true;
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

/** Deletes one of the user's passkeys; false when they have none by that id. */
export async function deletePasskey(db: D1Database, userId: string, id: string): Promise<boolean> {
  const deleted = await db
    .prepare("DELETE FROM passkey_credentials WHERE id = ? AND user_id = ? RETURNING id")
    .bind(id, userId)
    .first();
  return deleted !== null;
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

export async function createPairingToken(
  db: D1Database,
  t: { tokenHash: string; userId: string; teamId: string; now: number; ttlMs: number },
): Promise<void> {
  await db.batch([
    sweepExpired(db, "pairing_tokens", t.now),
    db
      .prepare(
        `INSERT INTO pairing_tokens (token_hash, user_id, team_id, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?)`,
      )
      .bind(t.tokenHash, t.userId, t.teamId, t.now, t.now + t.ttlMs),
  ]);
}

/** Uses a pairing token up, in one statement; only while its user is still in that team. */
export async function claimPairingToken(
  db: D1Database,
  tokenHash: string,
  now: number,
): Promise<{ userId: string; teamId: string } | null> {
  const row = await db
    .prepare(
      `UPDATE pairing_tokens SET used_at = ?2
        WHERE token_hash = ?1 AND used_at IS NULL AND expires_at > ?2
          AND EXISTS (SELECT 1 FROM memberships m
                       WHERE m.user_id = pairing_tokens.user_id AND m.team_id = pairing_tokens.team_id)
        RETURNING user_id, team_id`,
    )
    .bind(tokenHash, now)
    .first<{ user_id: string; team_id: string }>();
  return row ? { userId: row.user_id, teamId: row.team_id } : null;
}
