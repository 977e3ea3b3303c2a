/**
 * Standing rules as use cases: make one (D1 with its audit event, then the hub's copy), end one
 * (the same order), list them, and make one from a card's decision.
 *
 * Owns: the order of those steps, who may make and end which rule, and what a failure to reach
 * the hub answers (a rule made is undone; an end stands, and applies everywhere within 30 s). Does not own: the
 * SQL (`db/rules.ts`), the hub's copy (`hub/rules.ts`), or matching (the gate).
 */
import type { Approval } from "../../sdk/src/approval";
import type { Role } from "../../sdk/src/human/roles";
import {
  ENDED_RULES_SHOWN_MS,
  MAX_ACTIVE_RULES,
  type Rule,
  type RuleMatch,
  type RuleScope,
} from "../../sdk/src/human/rules";
import { argumentsText } from "../../sdk/src/rules";
import { canonicalJson, newId, sha256Hex } from "../crypto";
import { countActiveRules, endRule, insertRule, listRules } from "../db";
import { REQUEST_BUDGET_MS, withDeadline } from "../deadline";
import { DomainError } from "../errors";
import { hubFor } from "../hub/api";
import { ADMIN_ROLES, DECIDER_ROLES } from "../roles";
import type { Env } from "../types";
import { chainQueued } from "./audit";
import { auditEvents, userActor } from "./audit-events";

export interface RuleMaker {
  teamId: string;
  userId: string;
  role: Role;
}

/** Who may make a rule of this scope: deciders their own `me` rules, owners and admins `team` ones. */
export function assertMayMakeRule(who: RuleMaker, scope: RuleScope): void {
  const roles = scope === "team" ? ADMIN_ROLES : DECIDER_ROLES;
  if (!roles.includes(who.role)) {
    const what = scope === "team" ? "team rules (owners and admins only)" : "rules";
    throw new DomainError("forbidden", `your role (${who.role}) may not make ${what}`);
  }
}

/** Tells the team's hub that its rules changed, and waits until its copy has them. */
async function tellHub(env: Env, teamId: string): Promise<boolean> {
  try {
    await withDeadline(hubFor(env, teamId).rulesChanged(teamId), REQUEST_BUDGET_MS, "hub.rulesChanged");
    return true;
  } catch (error) {
    console.error(`rules: the hub's copy was not updated: ${String(error).slice(0, 200)}`);
    return false;
  }
}

/**
 * Makes a rule: D1 (with its role check, the team's bound and the audit event, in one batch),
 * then the hub's copy, before answering, so it applies from the next request on. A hub that
 * cannot be told undoes the rule: nothing stands that the caller was told failed.
 */
export async function createRule(
  env: Env,
  who: RuleMaker,
  r: {
    scope: RuleScope;
    match: RuleMatch;
    expiresInMs: number;
    note: string | null;
    fromApproval?: string;
    arguments?: string;
  },
): Promise<Rule> {
  assertMayMakeRule(who, r.scope);
  const now = Date.now();
  const id = newId("rul");
  const expiresAt = now + r.expiresInMs;
  const event = auditEvents.ruleCreated(
    { teamId: who.teamId, actor: userActor(who.userId), at: now },
    {
      ruleId: id,
      scope: r.scope,
      fields: Object.keys(r.match).sort(),
      matchHash: sha256Hex(canonicalJson(r.match)),
      expiresAt,
      fromApproval: r.fromApproval ?? null,
    },
  );
  const made = await insertRule(
    env.DB,
    {
      id,
      teamId: who.teamId,
      userId: who.userId,
      scope: r.scope,
      match: r.match,
      note: r.note,
      now,
      expiresAt,
      maxActive: MAX_ACTIVE_RULES,
      fromApproval: r.fromApproval ?? null,
      arguments: r.arguments ?? null,
    },
    event,
  );
  if (!made.ok) {
    throw made.error === "too_many_rules"
      ? new DomainError("too_many_rules", `the team has ${MAX_ACTIVE_RULES} active rules; end one first`)
      : new DomainError("forbidden", "your role may not make this rule");
  }
  if (!(await tellHub(env, who.teamId))) {
    await endRule(env.DB, { teamId: who.teamId, id, userId: who.userId, onlyCreator: false, now: Date.now() });
    await chainQueued(env, who.teamId);
    throw new DomainError("rules_unavailable", "the rule could not reach the team's gates; nothing was made");
  }
  await chainQueued(env, who.teamId);
  return made.rule;
}

/**
 * Ends a rule at once: D1 (with its queued change for the hub, `rule_changes`), then the hub's
 * copy, before answering. A hub that cannot be told stops applying it anyway once its copy is
 * RULES_MAX_AGE_MS old (30 s). Its creator, or an owner or admin, may end it; ending an ended
 * rule tells the hub again (a retry after `rules_unavailable`).
 */
export async function endStandingRule(env: Env, who: RuleMaker, ruleId: string): Promise<Rule> {
  const now = Date.now();
  const event = auditEvents.ruleEnded({ teamId: who.teamId, actor: userActor(who.userId), at: now }, ruleId);
  const onlyCreator = !ADMIN_ROLES.includes(who.role);
  const rule = await endRule(env.DB, { teamId: who.teamId, id: ruleId, userId: who.userId, onlyCreator, now }, event);
  if (!rule) throw new DomainError("not_found", "no such rule");
  const told = await tellHub(env, who.teamId);
  await chainQueued(env, who.teamId);
  if (!told) {
    const message =
      "the rule is ended in the record; the team's gates stop applying it within 30 s (retry to tell them now)";
    throw new DomainError("rules_unavailable", message);
  }
  return rule;
}

/** The team's active rules and those that ended in the last 7 days, newest first. */
export function listTeamRules(env: Env, teamId: string): Promise<Rule[]> {
  return listRules(env.DB, teamId, Date.now() - ENDED_RULES_SHOWN_MS);
}

/** Before a card's decision with a rule: the decider may make one and the team has room (else nothing is decided). */
export async function assertRoomForRule(env: Env, who: RuleMaker): Promise<void> {
  assertMayMakeRule(who, "me");
  if ((await countActiveRules(env.DB, who.teamId, Date.now())) >= MAX_ACTIVE_RULES) {
    throw new DomainError("too_many_rules", `the team has ${MAX_ACTIVE_RULES} active rules; end one first`);
  }
}

/**
 * After a decision that allowed `approval` with a rule: the `me` rule, or `rule_not_created` (the
 * allow stands). A rule bound to the request's input keeps its arguments for the Rules screen.
 */
export async function createCardRule(
  env: Env,
  who: RuleMaker,
  approval: Approval,
  r: { match: RuleMatch; expiresInMs: number },
): Promise<Rule> {
  try {
    const shown = r.match.input !== undefined ? { arguments: argumentsText(approval.snapshot.toolCall) } : {};
    return await createRule(env, who, { scope: "me", ...r, note: null, fromApproval: approval.id, ...shown });
  } catch (error) {
    const why = error instanceof DomainError ? error.message : "the rule could not be made";
    throw new DomainError("rule_not_created", `allowed once; ${why}`, { extra: { approval } });
  }
}
