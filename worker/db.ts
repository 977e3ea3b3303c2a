/**
 * All D1 access. Every function that reads or changes a team's rows takes the team id from
 * authentication as a parameter; nothing here trusts a team id from a request body.
 */
import { type AuditEntry, type AuditEvent, chainEvents, GENESIS_HASH, type StoredAuditRow } from "./audit-chain";
import { newId } from "./crypto";
import { parsePolicy, type TeamPolicy } from "./policy";
import type { AgentIdentity, Approval, ApprovalState, DecidedBy, Env, Role, SessionInfo, WebIdentity } from "./types";

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
    ...newTeamStatements(db, { teamId, userId, name: u.teamName, now: u.now }),
  ]);
  return { userId, teamId };
}

/** Another team for an existing user, who owns it. */
export async function createTeam(db: D1Database, t: { userId: string; name: string; now: number }): Promise<string> {
  const teamId = newId("team");
  await db.batch(newTeamStatements(db, { teamId, ...t }));
  return teamId;
}

/**
 * A team, its owner, and the first link of its audit chain, in one batch. Written here rather
 * than through the team's TeamHub because nothing else can write for a team that does not exist
 * yet; the hub reads its chain head from D1 on first use.
 */
function newTeamStatements(db: D1Database, t: { teamId: string; userId: string; name: string; now: number }) {
  const [genesis] = chainEvents(GENESIS_HASH, [
    {
      eventId: `team_created:${t.teamId}`,
      teamId: t.teamId,
      at: t.now,
      actor: `user:${t.userId}`,
      action: "team.created",
      subject: t.teamId,
    },
  ]);
  return [
    db.prepare("INSERT INTO teams (id, name, created_at) VALUES (?, ?, ?)").bind(t.teamId, t.name, t.now),
    db
      .prepare("INSERT INTO memberships (team_id, user_id, role, created_at) VALUES (?, ?, 'owner', ?)")
      .bind(t.teamId, t.userId, t.now),
    auditEntryStatement(db, genesis as AuditEntry),
  ];
}

export interface VersionedPolicy {
  policy: TeamPolicy;
  version: number;
}

export async function getTeamPolicy(db: D1Database, teamId: string): Promise<VersionedPolicy> {
  const row = await db
    .prepare("SELECT policy, policy_version FROM teams WHERE id = ?")
    .bind(teamId)
    .first<{ policy: string; policy_version: number }>();
  return { policy: parsePolicy(row?.policy), version: row?.policy_version ?? 0 };
}

/** Replaces the policy and bumps its version; returns the one it replaced and the new version. */
export async function setTeamPolicy(
  db: D1Database,
  teamId: string,
  policy: TeamPolicy,
): Promise<{ before: TeamPolicy; version: number }> {
  const [before, updated] = await db.batch<{ policy?: string; policy_version: number }>([
    db.prepare("SELECT policy, policy_version FROM teams WHERE id = ?").bind(teamId),
    db
      .prepare("UPDATE teams SET policy = ?, policy_version = policy_version + 1 WHERE id = ? RETURNING policy_version")
      .bind(JSON.stringify(policy), teamId),
  ]);
  return {
    before: parsePolicy(before?.results[0]?.policy),
    version: updated?.results[0]?.policy_version ?? 0,
  };
}

// ── sign-in links ───────────────────────────────────────────────────────────

export interface SignInLink {
  purpose: "signup" | "signin";
  email: string;
  name: string | null;
  team_name: string | null;
  /** A passkey made during passkey sign-up, stored once the link is confirmed. */
  passkey?: ParkedPasskey | null;
}

/**
 * A passkey waiting on a sign-up link, with the SHA-256 of the nonce that the browser which made
 * it holds in a cookie (kept in the same JSON column; rows without it never attach).
 */
export type ParkedPasskey = NewPasskey & { browserHash: string };

export async function createSignInLink(
  db: D1Database,
  l: SignInLink & { tokenHash: string; now: number; ttlMs: number },
): Promise<void> {
  await db.batch([
    sweepExpired(db, "sign_in_links", l.now),
    db
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
      ),
  ]);
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
  return row && { ...row, passkey: row.passkey ? (JSON.parse(row.passkey) as ParkedPasskey) : null };
}

// ── API keys ────────────────────────────────────────────────────────────────

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
 * Revokes a live key of the team (with `userId`: only if it is that user's) and returns the
 * sessions it opened (to deny and disconnect), or null when no such live key exists.
 */
export async function revokeApiKey(
  db: D1Database,
  r: { teamId: string; userId: string | null; keyId: string; now: number },
): Promise<string[] | null> {
  const [revoked, sessions] = await db.batch<{ id?: string; session_id?: string }>([
    db
      .prepare(
        `UPDATE api_keys SET revoked_at = ?1 WHERE id = ?2 AND team_id = ?3 AND (?4 IS NULL OR user_id = ?4)
            AND revoked_at IS NULL
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

/** The outbox ops D1 takes directly; audit ops go through the team's TeamHub instead. */
export type D1OutboxOp = Exclude<OutboxOp, { op: "audit" }>;

export function outboxStatement(db: D1Database, o: D1OutboxOp): D1PreparedStatement {
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

// ── audit log (hash-chained; appended by the team's TeamHub) ─────────────────

export type { AuditEvent };

/**
 * Appends an event to its team's audit log through the team's TeamHub, the chain's one writer.
 * The hub is reached through the binding rather than team-hub.ts, which itself reads D1 from here.
 */
export async function audit(env: Env, e: AuditEvent): Promise<void> {
  await env.TEAM_HUB.get(env.TEAM_HUB.idFromName(e.teamId)).appendAudit([e]);
}

/**
 * Inserts a chained entry only if its `prev_hash` is still the team's last hash (compare and
 * swap), so even a writer with a stale head cannot fork the chain: it inserts nothing and
 * re-reads the head. A replayed `event_id` inserts nothing either.
 */
export function auditEntryStatement(db: D1Database, e: AuditEntry): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO audit_log (event_id, team_id, at, actor, action, subject, detail, prev_hash, hash)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9
        WHERE COALESCE((SELECT hash FROM audit_log WHERE team_id = ?2 ORDER BY seq DESC LIMIT 1), ?10) = ?8
       ON CONFLICT (event_id) DO NOTHING
       RETURNING seq`,
    )
    .bind(
      e.eventId,
      e.teamId,
      e.at,
      e.actor,
      e.action,
      e.subject,
      JSON.stringify(e.detail ?? {}),
      e.prevHash,
      e.hash,
      GENESIS_HASH,
    );
}

/** Inserts entries in order; returns how many went in (fewer: the head moved or an event was a replay). */
export async function insertAuditEntries(db: D1Database, entries: AuditEntry[]): Promise<number> {
  const results = await db.batch(entries.map((e) => auditEntryStatement(db, e)));
  return results.reduce((n, r) => n + r.results.length, 0);
}

/** The team's chain head: the last entry's hash (64 zeros before the first chained entry). */
export async function lastAuditHash(db: D1Database, teamId: string): Promise<string> {
  const row = await db
    .prepare("SELECT hash FROM audit_log WHERE team_id = ? ORDER BY seq DESC LIMIT 1")
    .bind(teamId)
    .first<{ hash: string | null }>();
  return row?.hash ?? GENESIS_HASH;
}

/** Which of these event ids are already in the log (at most 100 per call: D1's bound-parameter limit). */
export async function writtenEventIds(db: D1Database, eventIds: string[]): Promise<Set<string>> {
  if (eventIds.length === 0) return new Set();
  const { results } = await db
    .prepare(`SELECT event_id FROM audit_log WHERE event_id IN (${eventIds.map(() => "?").join(", ")})`)
    .bind(...eventIds)
    .all<{ event_id: string }>();
  return new Set(results.map((r) => r.event_id));
}

const AUDIT_COLUMNS = `seq, event_id AS eventId, team_id AS teamId, at, actor, action, subject, detail,
  prev_hash AS prevHash, hash`;

/** Newest first, before `beforeSeq` when given. */
export async function listAudit(
  db: D1Database,
  q: { teamId: string; beforeSeq: number | null; limit: number },
): Promise<StoredAuditRow[]> {
  const { results } = await db
    .prepare(
      `SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE team_id = ?1 AND (?2 IS NULL OR seq < ?2)
        ORDER BY seq DESC LIMIT ?3`,
    )
    .bind(q.teamId, q.beforeSeq, q.limit)
    .all<StoredAuditRow>();
  return results;
}

/** Oldest first, after `afterSeq`: the verifier's pages. */
export async function auditPage(
  db: D1Database,
  q: { teamId: string; afterSeq: number; limit: number },
): Promise<StoredAuditRow[]> {
  const { results } = await db
    .prepare(`SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE team_id = ? AND seq > ? ORDER BY seq LIMIT ?`)
    .bind(q.teamId, q.afterSeq, q.limit)
    .all<StoredAuditRow>();
  return results;
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

// ── passkeys and pairing ────────────────────────────────────────────────────

/** Rows past their expiry are swept when new ones are made; used rows are kept until then. */
function sweepExpired(db: D1Database, table: "sign_in_links" | "webauthn_challenges" | "pairing_tokens", now: number) {
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
  env: Env,
  p: { passkey: NewPasskey; userId: string; teamId: string; now: number },
): Promise<boolean> {
  const { passkey: k } = p;
  const inserted = await env.DB.prepare(
    `INSERT INTO passkey_credentials (id, user_id, public_key, counter, transports, device_name, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING id`,
  )
    .bind(k.id, p.userId, k.publicKey, k.counter, JSON.stringify(k.transports), k.deviceName, p.now)
    .first();
  if (!inserted) return false;
  await audit(env, {
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

// ── teams and members (the dashboard) ───────────────────────────────────────

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

/** Changes a role unless that would leave the team without an owner; false when it would. */
export async function setMemberRole(
  db: D1Database,
  m: { teamId: string; userId: string; role: Role },
): Promise<boolean> {
  const { meta } = await db
    .prepare(`UPDATE memberships SET role = ?3 WHERE team_id = ?1 AND user_id = ?2 AND ${KEEPS_AN_OWNER}`)
    .bind(m.teamId, m.userId, m.role)
    .run();
  return meta.changes > 0;
}

/**
 * Removes a member, with their web sessions and push devices in this team, unless they are the
 * last owner (null then). Returns what the caller must also forget: session token hashes
 * (cached per isolate), device ids (the hub's copy) and live keys (to revoke with their requests).
 */
export async function removeMember(
  db: D1Database,
  m: { teamId: string; userId: string },
): Promise<{ tokenHashes: string[]; deviceIds: string[]; keyIds: string[] } | null> {
  const [removed, sessions, devices, keys] = await db.batch<{ user_id?: string; token_hash?: string; id?: string }>([
    db
      .prepare(`DELETE FROM memberships WHERE team_id = ?1 AND user_id = ?2 AND ${KEEPS_AN_OWNER} RETURNING user_id`)
      .bind(m.teamId, m.userId, "none"),
    // The rest only once the membership went: a refused removal must change nothing.
    db
      .prepare(
        `DELETE FROM web_sessions WHERE team_id = ?1 AND user_id = ?2
            AND NOT EXISTS (SELECT 1 FROM memberships WHERE team_id = ?1 AND user_id = ?2)
         RETURNING token_hash`,
      )
      .bind(m.teamId, m.userId),
    db
      .prepare(
        `DELETE FROM devices WHERE team_id = ?1 AND user_id = ?2
            AND NOT EXISTS (SELECT 1 FROM memberships WHERE team_id = ?1 AND user_id = ?2)
         RETURNING id`,
      )
      .bind(m.teamId, m.userId),
    db
      .prepare("SELECT id FROM api_keys WHERE team_id = ? AND user_id = ? AND revoked_at IS NULL")
      .bind(m.teamId, m.userId),
  ]);
  if (!removed?.results.length) return null;
  return {
    tokenHashes: (sessions?.results ?? []).map((r) => r.token_hash as string),
    deviceIds: (devices?.results ?? []).map((r) => r.id as string),
    keyIds: (keys?.results ?? []).map((r) => r.id as string),
  };
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
): Promise<void> {
  await db
    .prepare(
      `INSERT INTO invites (id, team_id, token_hash, role, email, created_by, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(i.id, i.teamId, i.tokenHash, i.role, i.email, i.createdBy, i.now, i.now + i.ttlMs)
    .run();
}

const PENDING_INVITE = "i.used_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > ?2";

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

export async function revokeInvite(db: D1Database, teamId: string, id: string, now: number): Promise<boolean> {
  const { meta } = await db
    .prepare(`UPDATE invites AS i SET revoked_at = ?2 WHERE i.id = ?3 AND i.team_id = ?1 AND ${PENDING_INVITE}`)
    .bind(teamId, now, id)
    .run();
  return meta.changes > 0;
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
  | { outcome: "already_member" | "invalid" };

/**
 * Uses the invite up and adds the user with its role, in one batch: the token is consumed only
 * by someone not yet in the team, and the membership is made only by the statement that
 * consumed it, so a link works once even under races.
 */
export async function acceptInvite(
  db: D1Database,
  a: { tokenHash: string; userId: string; now: number },
): Promise<InviteAcceptance> {
  const [consumed, , pending] = await db.batch<{ id?: string; team_id?: string; role?: Role }>([
    db
      .prepare(
        `UPDATE invites AS i SET used_at = ?2, used_by = ?3
          WHERE i.token_hash = ?1 AND ${PENDING_INVITE}
            AND NOT EXISTS (SELECT 1 FROM memberships m WHERE m.team_id = i.team_id AND m.user_id = ?3)
         RETURNING id, team_id, role`,
      )
      .bind(a.tokenHash, a.now, a.userId),
    db
      .prepare(
        `INSERT INTO memberships (team_id, user_id, role, created_at)
         SELECT team_id, ?3, role, ?2 FROM invites WHERE token_hash = ?1 AND used_by = ?3 AND used_at = ?2
         ON CONFLICT DO NOTHING`,
      )
      .bind(a.tokenHash, a.now, a.userId),
    db.prepare(`SELECT i.id FROM invites i WHERE i.token_hash = ?1 AND ${PENDING_INVITE}`).bind(a.tokenHash, a.now),
  ]);
  const row = consumed?.results[0];
  if (row)
    return { outcome: "joined", inviteId: row.id as string, teamId: row.team_id as string, role: row.role as Role };
  return pending?.results.length ? { outcome: "already_member" } : { outcome: "invalid" };
}

// ── agent sessions (the dashboard) ──────────────────────────────────────────

export interface SessionRow {
  sessionId: string;
  owner: { userId: string; name: string };
  title: string | null;
  agent: SessionInfo["agent"];
  host: string | null;
  cwd: string | null;
  connectedAt: number | null;
  disconnectedAt: number | null;
  lastSeenAt: number;
  pending: number;
}

interface SessionDbRow extends Omit<SessionRow, "owner" | "agent"> {
  ownerUserId: string;
  ownerName: string;
  agent: string | null;
}

const SESSION_SELECT = `SELECT s.session_id AS sessionId, s.owner_user_id AS ownerUserId, u.name AS ownerName, s.title,
       s.agent, s.host, s.cwd, s.connected_at AS connectedAt, s.disconnected_at AS disconnectedAt,
       s.last_seen_at AS lastSeenAt,
       (SELECT COUNT(*) FROM approvals a
         WHERE a.team_id = s.team_id AND a.session_id = s.session_id AND a.state = 'pending') AS pending
  FROM agent_sessions s JOIN users u ON u.id = s.owner_user_id`;

function sessionFromRow({ ownerUserId, ownerName, agent, ...s }: SessionDbRow): SessionRow {
  return { ...s, owner: { userId: ownerUserId, name: ownerName }, agent: agent ? JSON.parse(agent) : null };
}

/** Connected sessions, or the most recently seen ones. */
export async function listSessions(
  db: D1Database,
  q: { teamId: string; state: "connected" | "recent"; limit: number },
): Promise<SessionRow[]> {
  const connected = q.state === "connected" ? "AND s.connected_at IS NOT NULL AND s.disconnected_at IS NULL" : "";
  const { results } = await db
    .prepare(`${SESSION_SELECT} WHERE s.team_id = ? ${connected} ORDER BY s.last_seen_at DESC, s.session_id LIMIT ?`)
    .bind(q.teamId, q.limit)
    .all<SessionDbRow>();
  return results.map(sessionFromRow);
}

export async function getSession(db: D1Database, teamId: string, sessionId: string): Promise<SessionRow | null> {
  const row = await db
    .prepare(`${SESSION_SELECT} WHERE s.team_id = ? AND s.session_id = ?`)
    .bind(teamId, sessionId)
    .first<SessionDbRow>();
  return row ? sessionFromRow(row) : null;
}

/** A session's requests, oldest first; `cursor` is the last row of the previous page. */
export async function listSessionApprovals(
  db: D1Database,
  q: { teamId: string; sessionId: string; cursor: { createdAt: number; id: string } | null; limit: number },
): Promise<Approval[]> {
  const { results } = await db
    .prepare(
      `SELECT * FROM approvals WHERE team_id = ?1 AND session_id = ?2
          AND (?3 IS NULL OR created_at > ?3 OR (created_at = ?3 AND id > ?4))
        ORDER BY created_at, id LIMIT ?5`,
    )
    .bind(q.teamId, q.sessionId, q.cursor?.createdAt ?? null, q.cursor?.id ?? "", q.limit)
    .all<ApprovalRow>();
  return results.map(approvalFromRow);
}

// ── history and stats ───────────────────────────────────────────────────────

export interface HistoryFilter {
  teamId: string;
  state?: ApprovalState;
  reason?: string;
  /** The session's owner or the person who decided. */
  member?: string;
  session?: string;
  kind?: string;
  from?: number;
  to?: number;
}

/** The WHERE clause and bindings of a history filter; resolved requests of the team only. */
function historyWhere(f: HistoryFilter): { where: string; binds: Array<string | number> } {
  const where = ["a.team_id = ?", "a.state <> 'pending'"];
  const binds: Array<string | number> = [f.teamId];
  const add = (clause: string, ...values: Array<string | number>) => {
    where.push(clause);
    binds.push(...values);
  };
  if (f.state) add("a.state = ?", f.state);
  if (f.reason) add("a.reason = ?", f.reason);
  if (f.member) add("(a.owner_user_id = ? OR json_extract(a.decided_by, '$.userId') = ?)", f.member, f.member);
  if (f.session) add("a.session_id = ?", f.session);
  if (f.kind) add("a.tool_kind = ?", f.kind);
  if (f.from !== undefined) add("a.created_at >= ?", f.from);
  if (f.to !== undefined) add("a.created_at < ?", f.to);
  return { where: where.join(" AND "), binds };
}

export type HistoryApproval = Approval & { owner: { userId: string; name: string }; latencyMs: number | null };

/** Newest first; `cursor` is the last row of the previous page. */
export async function listHistory(
  db: D1Database,
  f: HistoryFilter,
  page: { cursor: { createdAt: number; id: string } | null; limit: number },
): Promise<HistoryApproval[]> {
  const { where, binds } = historyWhere(f);
  const after = page.cursor ? " AND (a.created_at < ? OR (a.created_at = ? AND a.id < ?))" : "";
  const cursorBinds = page.cursor ? [page.cursor.createdAt, page.cursor.createdAt, page.cursor.id] : [];
  const { results } = await db
    .prepare(
      `SELECT a.*, u.name AS owner_name FROM approvals a LEFT JOIN users u ON u.id = a.owner_user_id
        WHERE ${where}${after} ORDER BY a.created_at DESC, a.id DESC LIMIT ?`,
    )
    .bind(...binds, ...cursorBinds, page.limit)
    .all<ApprovalRow & { owner_user_id: string; owner_name: string | null }>();
  return results.map((r) => {
    const approval = approvalFromRow(r);
    return {
      ...approval,
      owner: { userId: r.owner_user_id, name: r.owner_name ?? "" },
      latencyMs: approval.resolvedAt === null ? null : approval.resolvedAt - approval.createdAt,
    };
  });
}

/** One flat row per resolved request, without the snapshot: what exports carry. */
export interface HistoryExportRow {
  id: string;
  createdAt: number;
  resolvedAt: number | null;
  state: ApprovalState;
  reason: string | null;
  sessionId: string;
  ownerUserId: string;
  ownerName: string | null;
  toolTitle: string | null;
  toolKind: string | null;
  optionId: string | null;
  decidedByUserId: string | null;
  decidedByName: string | null;
  decidedByDevice: string | null;
  latencyMs: number | null;
}

export async function exportHistory(db: D1Database, f: HistoryFilter, limit: number): Promise<HistoryExportRow[]> {
  const { where, binds } = historyWhere(f);
  const { results } = await db
    .prepare(
      `SELECT a.id, a.created_at AS createdAt, a.resolved_at AS resolvedAt, a.state, a.reason,
              a.session_id AS sessionId, a.owner_user_id AS ownerUserId, u.name AS ownerName,
              a.tool_title AS toolTitle, a.tool_kind AS toolKind, a.option_id AS optionId,
              json_extract(a.decided_by, '$.userId') AS decidedByUserId,
              json_extract(a.decided_by, '$.name') AS decidedByName,
              json_extract(a.decided_by, '$.device') AS decidedByDevice,
              a.resolved_at - a.created_at AS latencyMs
         FROM approvals a LEFT JOIN users u ON u.id = a.owner_user_id
        WHERE ${where} ORDER BY a.created_at DESC, a.id DESC LIMIT ?`,
    )
    .bind(...binds, limit)
    .all<HistoryExportRow>();
  return results;
}

export interface DayCounts {
  date: string;
  allowed: number;
  denied: number;
  cancelled: number;
  expired: number;
}

export interface LatencyStats {
  p50: number | null;
  p90: number | null;
  count: number;
}

/**
 * Requests per UTC day by outcome, and human decision latency percentiles (nearest rank), all
 * computed by D1: the Worker receives one row per day and one row of percentiles.
 */
export async function teamStats(
  db: D1Database,
  teamId: string,
  since: number,
): Promise<{ days: DayCounts[]; latency: LatencyStats }> {
  const [days, latency] = await db.batch<Record<string, unknown>>([
    db
      .prepare(
        `SELECT date(created_at / 1000, 'unixepoch') AS date,
                SUM(state = 'allowed') AS allowed, SUM(state = 'denied') AS denied,
                SUM(state = 'cancelled') AS cancelled, SUM(state = 'expired') AS expired
           FROM approvals WHERE team_id = ? AND created_at >= ? AND state <> 'pending'
          GROUP BY 1 ORDER BY 1`,
      )
      .bind(teamId, since),
    db
      .prepare(
        `WITH l AS (
           SELECT resolved_at - created_at AS ms,
                  ROW_NUMBER() OVER (ORDER BY resolved_at - created_at) AS rank, COUNT(*) OVER () AS n
             FROM approvals WHERE team_id = ? AND created_at >= ? AND reason = 'decided')
         SELECT COUNT(*) AS count, MIN(CASE WHEN rank >= n * 0.5 THEN ms END) AS p50,
                MIN(CASE WHEN rank >= n * 0.9 THEN ms END) AS p90
           FROM l`,
      )
      .bind(teamId, since),
  ]);
  const l = latency?.results[0] as { count: number; p50: number | null; p90: number | null } | undefined;
  return {
    days: (days?.results ?? []) as unknown as DayCounts[],
    latency: { p50: l?.p50 ?? null, p90: l?.p90 ?? null, count: l?.count ?? 0 },
  };
}
