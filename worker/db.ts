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
}

export async function createSignInLink(
  db: D1Database,
  l: SignInLink & { tokenHash: string; now: number; ttlMs: number },
): Promise<void> {
  await db
    .prepare(
      `INSERT INTO sign_in_links (token_hash, purpose, email, name, team_name, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(l.tokenHash, l.purpose, l.email, l.name, l.team_name, l.now, l.now + l.ttlMs)
    .run();
}

/** Marks the link used and returns it, in one statement: a link works once, even under races. */
export async function consumeSignInLink(db: D1Database, tokenHash: string, now: number): Promise<SignInLink | null> {
  return db
    .prepare(
      `UPDATE sign_in_links SET used_at = ?1
        WHERE token_hash = ?2 AND used_at IS NULL AND expires_at > ?1
        RETURNING purpose, email, name, team_name`,
    )
    .bind(now, tokenHash)
    .first<SignInLink>();
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
