/** D1 access: agent sessions. */
import type { AgentSession, Approval, Owner } from "../../sdk/src/approval";
import type { AgentIdentity } from "../types";
import { type ApprovalRow, approvalFromRow } from "./approvals";
import { KEY_OWNER_IS_MEMBER } from "./keys";

/**
 * Registers a key's connection to a session. The first key's user owns the session; a key of
 * another user gets `forbidden`. Also records the key→session link that revocation follows.
 */
export async function joinAgentSession(
  db: D1Database,
  a: AgentIdentity & { sessionId: string; now: number },
): Promise<"ok" | "forbidden" | "revoked"> {
  // One transaction with the key check: a revocation (or a removal) either sees this link or is
  // seen here, so no socket can slip in between a key's revocation and its sessions being told.
  const [owner, , key] = await db.batch<{ owner_user_id?: string; revoked_at?: number | null }>([
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
    // A key whose user left the team counts as revoked, whether or not its revocation finished.
    db
      .prepare(
        `SELECT CASE WHEN ${KEY_OWNER_IS_MEMBER} THEN revoked_at ELSE 0 END AS revoked_at FROM api_keys WHERE id = ?`,
      )
      .bind(a.keyId),
  ]);
  if (key?.results[0]?.revoked_at !== null) return "revoked";
  return owner?.results[0]?.owner_user_id === a.userId ? "ok" : "forbidden";
}

// ── agent sessions (the dashboard) ──────────────────────────────────────────

interface SessionDbRow extends Omit<AgentSession, "owner" | "agent" | "parent" | "stopped"> {
  ownerUserId: string;
  ownerName: string;
  agent: string | null;
  parent: string | null;
  stopped: string | null;
}

const SESSION_SELECT = `SELECT s.session_id AS sessionId, s.owner_user_id AS ownerUserId, u.name AS ownerName, s.title,
       s.agent, s.host, s.cwd, s.parent, s.connected_at AS connectedAt, s.disconnected_at AS disconnectedAt,
       s.last_seen_at AS lastSeenAt, s.stopped,
       (SELECT COUNT(*) FROM approvals a
         WHERE a.team_id = s.team_id AND a.session_id = s.session_id AND a.state = 'pending') AS pending
  FROM agent_sessions s JOIN users u ON u.id = s.owner_user_id`;

function sessionFromRow({ ownerUserId, ownerName, agent, parent, stopped, ...s }: SessionDbRow): AgentSession {
  return {
    ...s,
    owner: { userId: ownerUserId, name: ownerName },
    agent: agent ? JSON.parse(agent) : null,
    ...(parent ? { parent: JSON.parse(parent) } : {}),
    ...(stopped && { stopped: JSON.parse(stopped) }),
  };
}

/**
 * Connected sessions, or the most recently seen ones. A session counts as connected only if it
 * was seen at `liveSince` or later: a connected gate reports periodically, so an older
 * "connected" row is one whose gate stopped reporting.
 */
export async function listSessions(
  db: D1Database,
  q: { teamId: string; state: "connected" | "recent"; limit: number; liveSince: number },
): Promise<AgentSession[]> {
  const connected =
    q.state === "connected"
      ? "AND s.connected_at IS NOT NULL AND s.disconnected_at IS NULL AND s.last_seen_at >= ?3"
      : "";
  const { results } = await db
    .prepare(`${SESSION_SELECT} WHERE s.team_id = ?1 ${connected} ORDER BY s.last_seen_at DESC, s.session_id LIMIT ?2`)
    .bind(...(q.state === "connected" ? [q.teamId, q.limit, q.liveSince] : [q.teamId, q.limit]))
    .all<SessionDbRow>();
  return results.map(sessionFromRow);
}

export async function getSession(db: D1Database, teamId: string, sessionId: string): Promise<AgentSession | null> {
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

/**
 * Whose session asked: the approval's recorded owner, or (for a request the gate holds and D1
 * has not indexed yet) its session's, which is recorded before the session's first request.
 */
export async function getApprovalOwner(
  db: D1Database,
  teamId: string,
  a: { id: string; sessionId: string },
): Promise<Owner | null> {
  return db
    .prepare(
      `SELECT u.id AS userId, u.name FROM users u WHERE u.id = COALESCE(
         (SELECT owner_user_id FROM approvals WHERE id = ?2 AND team_id = ?1),
         (SELECT owner_user_id FROM agent_sessions WHERE team_id = ?1 AND session_id = ?3))`,
    )
    .bind(teamId, a.id, a.sessionId)
    .first<Owner>();
}
