/**
 * D1 access: standing rules, the record (`standing_rules`), and the queue of rule changes for
 * the team's hub (`rule_changes`, written in the same batch as each change). Every query is
 * scoped by the team from authentication. How many requests a rule allowed is counted from the
 * approvals the gates' outboxes wrote (`approvals.rule_id`), so it is never on an agent's path.
 */
import type { Rule, RuleMatch, RuleScope } from "../../sdk/src/human/rules";
import type { StandingRule } from "../../sdk/src/rules";
import type { AuditEvent } from "../audit-chain";
import { auditOutboxStatements } from "./audit";

interface RuleRow {
  id: string;
  scope: RuleScope;
  match: string;
  note: string | null;
  created_by: string;
  creator_name: string | null;
  created_at: number;
  expires_at: number;
  ended_at: number | null;
  ended_by: string | null;
  ender_name: string | null;
  allowed: number;
  from_approval: string | null;
  arguments: string | null;
}

const RULE_SELECT = `SELECT r.id, r.scope, r.match, r.note, r.created_by, c.name AS creator_name, r.created_at,
         r.expires_at, r.ended_at, r.ended_by, e.name AS ender_name, r.from_approval, r.arguments,
         (SELECT COUNT(*) FROM approvals a WHERE a.rule_id = r.id AND a.team_id = r.team_id) AS allowed
    FROM standing_rules r LEFT JOIN users c ON c.id = r.created_by LEFT JOIN users e ON e.id = r.ended_by`;

function ruleFromRow(r: RuleRow): Rule {
  return {
    id: r.id,
    scope: r.scope,
    match: JSON.parse(r.match) as RuleMatch,
    note: r.note,
    createdBy: { userId: r.created_by, name: r.creator_name ?? "" },
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    endedAt: r.ended_at,
    endedBy: r.ended_by ? { userId: r.ended_by, name: r.ender_name ?? "" } : null,
    allowed: r.allowed,
    fromApproval: r.from_approval,
    arguments: r.arguments,
  };
}

/** The roles whose rules stand: owners and admins for any rule, approvers for their own `me` rules. */
const CREATOR_MAY_HOLD = `EXISTS (SELECT 1 FROM memberships m WHERE m.team_id = r.team_id AND m.user_id = r.created_by
    AND (m.role IN ('owner', 'admin') OR (r.scope = 'me' AND m.role = 'approver')))`;

export type CreateRuleResult = { ok: true; rule: Rule } | { ok: false; error: "too_many_rules" | "forbidden" };

/**
 * Makes a rule if its creator's role (as D1 has it now) may hold it and the team has fewer than
 * `maxActive` active rules; `audit` is queued in the same batch, only if it was made.
 */
export async function insertRule(
  db: D1Database,
  r: {
    id: string;
    teamId: string;
    userId: string;
    scope: RuleScope;
    match: RuleMatch;
    note: string | null;
    now: number;
    expiresAt: number;
    maxActive: number;
    /** A card's rule: the request it was made from, and its arguments as people read them. */
    fromApproval?: string | null;
    arguments?: string | null;
  },
  audit?: AuditEvent,
): Promise<CreateRuleResult> {
  const insert = db
    .prepare(
      `INSERT INTO standing_rules
         (id, team_id, created_by, scope, match, note, created_at, expires_at, from_approval, arguments)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?10, ?11
        WHERE (SELECT COUNT(*) FROM standing_rules
                WHERE team_id = ?2 AND ended_at IS NULL AND expires_at > ?7) < ?9
          AND EXISTS (SELECT 1 FROM memberships m WHERE m.team_id = ?2 AND m.user_id = ?3
                       AND (m.role IN ('owner', 'admin') OR (?4 = 'me' AND m.role = 'approver')))`,
    )
    .bind(
      r.id,
      r.teamId,
      r.userId,
      r.scope,
      JSON.stringify(r.match),
      r.note,
      r.now,
      r.expiresAt,
      r.maxActive,
      r.fromApproval ?? null,
      r.arguments ?? null,
    );
  const made = { sql: "EXISTS (SELECT 1 FROM standing_rules WHERE id = ?5)", binds: [r.id] };
  const [result] = await db.batch([
    insert,
    ruleChangeStatement(db, r.teamId, r.id, r.now, made),
    ...auditOutboxStatements(db, audit, made),
  ]);
  if ((result?.meta.changes ?? 0) > 0) {
    return { ok: true, rule: (await getRule(db, r.teamId, r.id)) as Rule };
  }
  const member = await db
    .prepare(
      `SELECT 1 FROM memberships WHERE team_id = ? AND user_id = ?
         AND (role IN ('owner', 'admin') OR (? = 'me' AND role = 'approver'))`,
    )
    .bind(r.teamId, r.userId, r.scope)
    .first();
  return { ok: false, error: member ? "too_many_rules" : "forbidden" };
}

/** How many rules of the team stand at `now` (not ended, not expired). */
export async function countActiveRules(db: D1Database, teamId: string, now: number): Promise<number> {
  const row = await db
    .prepare("SELECT COUNT(*) AS n FROM standing_rules WHERE team_id = ? AND ended_at IS NULL AND expires_at > ?")
    .bind(teamId, now)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

export async function getRule(db: D1Database, teamId: string, id: string): Promise<Rule | null> {
  const row = await db.prepare(`${RULE_SELECT} WHERE r.id = ? AND r.team_id = ?`).bind(id, teamId).first<RuleRow>();
  return row ? ruleFromRow(row) : null;
}

/** Active rules and those that ended (expired or were ended) after `since`; newest first, at most 500. */
export async function listRules(db: D1Database, teamId: string, since: number): Promise<Rule[]> {
  const { results } = await db
    .prepare(
      `${RULE_SELECT} WHERE r.team_id = ?1 AND COALESCE(r.ended_at, r.expires_at) > ?2
        ORDER BY r.created_at DESC, r.id DESC LIMIT 500`,
    )
    .bind(teamId, since)
    .all<RuleRow>();
  return results.map(ruleFromRow);
}

/**
 * Ends a rule now (`ended_at`), once; ending it again changes nothing. With `onlyCreator`, only
 * that user's rule. `audit` is queued in the same batch, only if this call ended it. Null when
 * no such rule is visible.
 */
export async function endRule(
  db: D1Database,
  r: { teamId: string; id: string; userId: string; onlyCreator: boolean; now: number },
  audit?: AuditEvent,
): Promise<Rule | null> {
  const endedNow = {
    sql: "EXISTS (SELECT 1 FROM standing_rules WHERE id = ?5 AND team_id = ?6 AND ended_at = ?7)",
    binds: [r.id, r.teamId, r.now],
  };
  await db.batch([
    db
      .prepare(
        `UPDATE standing_rules SET ended_at = ?1, ended_by = ?2
          WHERE id = ?3 AND team_id = ?4 AND ended_at IS NULL AND (?5 = 0 OR created_by = ?2)`,
      )
      .bind(r.now, r.userId, r.id, r.teamId, r.onlyCreator ? 1 : 0),
    ruleChangeStatement(db, r.teamId, r.id, r.now, endedNow),
    ...auditOutboxStatements(db, audit, endedNow),
  ]);
  const rule = await getRule(db, r.teamId, r.id);
  if (!rule || (r.onlyCreator && rule.createdBy.userId !== r.userId)) return null;
  return rule;
}

/**
 * Queues the change of rule `ruleId` for the team's hub, in the batch of the change, only if
 * `onlyIf` (parameters from `?5`, as an audit condition's; `?4` is unused) holds after it: a
 * rule made or ended by this very write.
 */
function ruleChangeStatement(
  db: D1Database,
  teamId: string,
  ruleId: string,
  now: number,
  onlyIf: { sql: string; binds: Array<string | number> },
): D1PreparedStatement {
  return db
    .prepare(`INSERT INTO rule_changes (team_id, rule_id, changed_at) SELECT ?1, ?2, ?3 WHERE ${onlyIf.sql}`)
    .bind(teamId, ruleId, now, null, ...onlyIf.binds);
}

/**
 * The team's rules that stand at `now`, oldest first, for the hub's copy (not ended, not
 * expired, made by a member whose role (now) may hold them), with the last queued rule change
 * this read saw (`seenChange`, null when none is queued): one batch, so one snapshot.
 */
export async function standingRules(
  db: D1Database,
  teamId: string,
  now: number,
): Promise<{ rules: StandingRule[]; seenChange: number | null }> {
  const [changes, standing] = await db.batch<Record<string, unknown>>([
    db.prepare("SELECT MAX(seq) AS seq FROM rule_changes WHERE team_id = ?").bind(teamId),
    db
      .prepare(
        `SELECT r.id, r.scope, r.match, r.created_by, u.name AS creator_name, r.expires_at
           FROM standing_rules r LEFT JOIN users u ON u.id = r.created_by
          WHERE r.team_id = ? AND r.ended_at IS NULL AND r.expires_at > ? AND ${CREATOR_MAY_HOLD}
          ORDER BY r.created_at, r.id`,
      )
      .bind(teamId, now),
  ]);
  const results = (standing?.results ?? []) as Array<{
    id: string;
    scope: RuleScope;
    match: string;
    created_by: string;
    creator_name: string | null;
    expires_at: number;
  }>;
  const seenChange = (changes?.results[0]?.seq as number | null | undefined) ?? null;
  const rules = results.map((r) => ({
    id: r.id,
    scope: r.scope,
    match: JSON.parse(r.match) as RuleMatch,
    createdBy: { userId: r.created_by, name: r.creator_name ?? "" },
    expiresAt: r.expires_at,
  }));
  return { rules, seenChange };
}

/** The hub's copy was read after the team's queued rule changes up to `seq`: they leave the queue. */
export async function dequeueRuleChanges(db: D1Database, teamId: string, seq: number): Promise<void> {
  await db.prepare("DELETE FROM rule_changes WHERE team_id = ? AND seq <= ?").bind(teamId, seq).run();
}
