/** D1 access: approvals (index and history). */
import type {
  Approval,
  ApprovalRule,
  ApprovalState,
  DecidedBy,
  OwnedApproval,
  SessionInfo,
  SessionStop,
} from "../../sdk/src/approval";
import type { BoundStepUpAssertion } from "../../sdk/src/human/step-up";
import type { SealedRequest } from "../../sdk/src/private/sealed";
import type { AuditEvent } from "../audit-chain";

export interface ApprovalRow {
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
  /** `permission` or `elicitation` (migration 0014); an elicitation's `action` once answered. */
  request_type?: string;
  action?: string | null;
  /** JSON {id, createdBy}: the standing rule that allowed it (migration 0011). */
  rule: string | null;
  /** The decider's words (absent from rows read before migration 0013). */
  message?: string | null;
  /** Migration 0012; null on rows from before tiers and on normal requests' quorum. */
  risk: string | null;
  quorum: string | null;
  /** Migration 0028: an allow with edited input (JSON) and its hash; absent or null otherwise. */
  edited_input?: string | null;
  edited_input_hash?: string | null;
  /** Migration 0039: a private request's sealed envelope (JSON); null or absent for standard ones. */
  sealed?: string | null;
}

export function approvalFromRow(r: ApprovalRow): Approval {
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
    ...(r.request_type === "elicitation" && { type: "elicitation", action: (r.action ?? null) as Approval["action"] }),
    ...(r.rule ? { rule: JSON.parse(r.rule) as ApprovalRule } : {}),
    ...(typeof r.message === "string" && { message: r.message }),
    ...(r.risk === "high" || r.risk === "normal" ? { risk: r.risk } : {}),
    ...(r.quorum ? { quorum: JSON.parse(r.quorum) } : {}),
    ...(r.edited_input && r.edited_input_hash
      ? { editedInput: JSON.parse(r.edited_input), editedInputHash: r.edited_input_hash }
      : {}),
    ...(r.sealed ? { sealed: JSON.parse(r.sealed) as SealedRequest } : {}),
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

/** The row of an approval joined with its owner's name (`owner_name`). */
export type OwnedApprovalRow = ApprovalRow & { owner_user_id: string; owner_name: string | null };

export function ownedApprovalFromRow(r: OwnedApprovalRow): OwnedApproval {
  return { ...approvalFromRow(r), owner: { userId: r.owner_user_id, name: r.owner_name ?? "" } };
}

/** Newest first, with whose session asked; `cursor` is the last row of the previous page. */
export async function listApprovals(db: D1Database, q: ApprovalQuery): Promise<OwnedApproval[]> {
  const where = ["a.team_id = ?1", q.state === "pending" ? "a.state = 'pending'" : "a.state <> 'pending'"];
  if (q.scope === "mine") where.push("a.owner_user_id = ?2");
  if (q.cursor) where.push("(a.created_at < ?3 OR (a.created_at = ?3 AND a.id < ?4))");
  const { results } = await db
    .prepare(
      `SELECT a.*, u.name AS owner_name FROM approvals a LEFT JOIN users u ON u.id = a.owner_user_id
        WHERE ${where.join(" AND ")} ORDER BY a.created_at DESC, a.id DESC LIMIT ?5`,
    )
    .bind(q.teamId, q.userId, q.cursor?.createdAt ?? 0, q.cursor?.id ?? "", q.limit)
    .all<OwnedApprovalRow>();
  return results.map(ownedApprovalFromRow);
}

export async function getApprovalRecord(db: D1Database, teamId: string, id: string): Promise<Approval | null> {
  const row = await db
    .prepare("SELECT * FROM approvals WHERE id = ? AND team_id = ?")
    .bind(id, teamId)
    .first<ApprovalRow>();
  return row ? approvalFromRow(row) : null;
}

/** The verified step-up assertions D1 keeps of an approval (after its gate pruned it), or null for none of the team's. */
export async function getApprovalStepUps(
  db: D1Database,
  teamId: string,
  id: string,
): Promise<{ approval: Approval; stepUps: BoundStepUpAssertion[] } | null> {
  const row = await db
    .prepare("SELECT * FROM approvals WHERE id = ? AND team_id = ?")
    .bind(id, teamId)
    .first<ApprovalRow & { step_ups: string | null }>();
  if (!row) return null;
  return { approval: approvalFromRow(row), stepUps: row.step_ups ? JSON.parse(row.step_ups) : [] };
}

/** A past permission request as a standing rule reads it. */
export type PastRequest = Pick<Approval, "id" | "sessionId" | "createdAt" | "snapshot" | "options" | "sealed" | "risk">;

/**
 * One page, newest first, of the permission requests asked in one person's sessions of a team
 * since `since`, leaving out `except`; only of `kind` when it is given. `before` is the last row
 * of the previous page.
 */
export async function pastRequestsPage(
  db: D1Database,
  q: {
    teamId: string;
    ownerUserId: string;
    since: number;
    except: string;
    kind: string | null;
    before: { createdAt: number; id: string } | null;
    limit: number;
  },
): Promise<PastRequest[]> {
  const where = [
    "team_id = ?1",
    "owner_user_id = ?2",
    "request_type = 'permission'",
    "created_at >= ?3",
    "id <> ?4",
    ...(q.kind !== null ? ["tool_kind = ?5"] : []),
    ...(q.before ? ["(created_at < ?6 OR (created_at = ?6 AND id < ?7))"] : []),
  ];
  const { results } = await db
    .prepare(
      `SELECT id, session_id, created_at, snapshot, options, sealed, risk FROM approvals
        WHERE ${where.join(" AND ")} ORDER BY created_at DESC, id DESC LIMIT ?8`,
    )
    .bind(q.teamId, q.ownerUserId, q.since, q.except, q.kind, q.before?.createdAt ?? 0, q.before?.id ?? "", q.limit)
    .all<Pick<ApprovalRow, "id" | "session_id" | "created_at" | "snapshot" | "options" | "sealed" | "risk">>();
  return results.map((r) => ({
    id: r.id,
    sessionId: r.session_id,
    createdAt: r.created_at,
    snapshot: JSON.parse(r.snapshot),
    options: JSON.parse(r.options),
    // A private request is matched by its rule fingerprint and judged by its SDK's tier.
    ...(r.sealed && { sealed: JSON.parse(r.sealed) as SealedRequest }),
    ...(r.risk === "high" || r.risk === "normal" ? { risk: r.risk } : {}),
  }));
}

// ── writes replayed from a SessionGate outbox ───────────────────────────────

/** What a SessionGate hands to D1 after the agent has its answer. Replays are idempotent. */
export type OutboxOp =
  /** `stepUps`: the verified step-up assertions the approval's allows carried so far. */
  | { op: "approval"; teamId: string; ownerUserId: string; approval: Approval; stepUps?: BoundStepUpAssertion[] }
  /** `at`: the gate's time of it; D1 keeps the newest (an older one replayed late changes nothing). */
  | { op: "session"; teamId: string; sessionId: string; info: SessionInfo; connected: boolean; at: number }
  /**
   * The session was stopped (who, when, why) or resumed (null) at `at`: the sessions row's
   * `stopped`; D1 keeps the newest. (Ops queued before `at` was added carry none: they apply.)
   */
  | { op: "session_stop"; teamId: string; sessionId: string; stopped: SessionStop | null; at?: number }
  | ({ op: "audit" } & AuditEvent);

/** The outbox ops D1 takes directly; audit ops go through the team's TeamHub instead. */
export type D1OutboxOp = Exclude<OutboxOp, { op: "audit" }>;

export function outboxStatement(db: D1Database, o: D1OutboxOp): D1PreparedStatement {
  switch (o.op) {
    case "approval":
      return approvalUpsertStatement(db, o.teamId, o.ownerUserId, o.approval, o.stepUps);
    case "session":
      return db
        .prepare(
          `UPDATE agent_sessions SET title = ?3, agent = ?4, host = ?5, cwd = ?6, last_seen_at = ?7,
                  connected_at = CASE WHEN ?8 THEN ?7 ELSE connected_at END,
                  disconnected_at = CASE WHEN ?8 THEN NULL ELSE ?7 END, parent = ?9, session_at = ?7
            WHERE team_id = ?1 AND session_id = ?2 AND (session_at IS NULL OR session_at <= ?7)`,
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
          o.info.parent ? JSON.stringify(o.info.parent) : null,
        );
    case "session_stop":
      return db
        .prepare(
          `UPDATE agent_sessions SET stopped = ?3, stop_at = COALESCE(?4, stop_at)
            WHERE team_id = ?1 AND session_id = ?2 AND (?4 IS NULL OR stop_at IS NULL OR stop_at <= ?4)`,
        )
        .bind(o.teamId, o.sessionId, o.stopped ? JSON.stringify(o.stopped) : null, o.at ?? null);
  }
}

/** Insert, or move a pending row to its terminal state; a terminal row never changes again. */
function approvalUpsertStatement(
  db: D1Database,
  teamId: string,
  ownerUserId: string,
  a: Approval,
  stepUps?: BoundStepUpAssertion[],
): D1PreparedStatement {
  const toolCall = a.snapshot.toolCall as { title?: unknown; kind?: unknown };
  // A pending row may change while pending too (a quorum's first allow: quorum, step_ups).
  return db
    .prepare(
      `INSERT INTO approvals (id, team_id, session_id, owner_user_id, state, reason, snapshot, request_hash,
                              options, tool_title, tool_kind, created_at, expires_at, resolved_at, decided_by, option_id,
                              request_type, action, rule, rule_id, risk, quorum, step_ups, message,
                              edited_input, edited_input_hash, sealed)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24,
               ?25, ?26, ?27)
       ON CONFLICT (id) DO UPDATE SET state = excluded.state, reason = excluded.reason,
              resolved_at = excluded.resolved_at, decided_by = excluded.decided_by, option_id = excluded.option_id,
              action = excluded.action, rule = excluded.rule, rule_id = excluded.rule_id,
              quorum = excluded.quorum, message = excluded.message, step_ups = COALESCE(excluded.step_ups, approvals.step_ups),
              edited_input = excluded.edited_input, edited_input_hash = excluded.edited_input_hash
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
      a.type ?? "permission",
      a.action ?? null,
      a.rule ? JSON.stringify(a.rule) : null,
      a.rule?.id ?? null,
      a.risk ?? null,
      a.quorum ? JSON.stringify(a.quorum) : null,
      stepUps ? JSON.stringify(stepUps) : null,
      a.message ?? null,
      a.editedInput ? JSON.stringify(a.editedInput) : null,
      a.editedInputHash ?? null,
      a.sealed ? JSON.stringify(a.sealed) : null,
    );
}
