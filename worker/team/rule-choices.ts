/**
 * A card's rule choices as the human side reads them (`GET /v1/approvals/:id/rule-choices`): the
 * rules the request's gate offers this person, each with its sentence and how many of their
 * requests of the last 7 days it would have allowed.
 *
 * Owns: the count: D1's record of the person's permission requests (this team, their sessions:
 * a card's rule is a `me` rule), newest first, at most RULE_CHOICE_SCAN_MAX, each tried with the
 * gate's own test (`gate/rule-allow.ts` `allowingRule`) under the session's high-risk patterns.
 * Does not own: which choices a request gets (the gate, `sdk/src/card-rules.ts`), the SQL
 * (`db/approvals.ts`).
 */
import {
  RULE_CHOICE_SCAN_MAX,
  RULE_CHOICE_WINDOW_MS,
  type RuleChoices,
  type RuleMatch,
} from "../../sdk/src/human/rules";
import { ruleFacts, ruleMatches, type StandingRule } from "../../sdk/src/rules";
import { type PastRequest, pastRequestsPage } from "../db";
import { REQUEST_BUDGET_MS, withDeadline } from "../deadline";
import type { GateRuleChoices } from "../gate/api";
import { allowingRule, highRiskTest } from "../gate/rule-allow";
import type { Env } from "../types";
import { approvalGate, noSuchApproval } from "./approvals";

/** Requests read from D1 per query while counting. */
const PAGE = 200;

export async function ruleChoicesFor(
  env: Env,
  who: { teamId: string; userId: string },
  approvalId: string,
): Promise<RuleChoices> {
  // RPC stub types reject `unknown` JSON fields as unserialisable; the values are plain JSON.
  const offered = (await withDeadline(
    approvalGate(env, approvalId).ruleChoices(who.teamId, approvalId, who.userId),
    REQUEST_BUDGET_MS,
    "gate.ruleChoices",
  )) as unknown as GateRuleChoices | null;
  if (!offered) throw noSuchApproval();
  const now = Date.now();
  const since = now - RULE_CHOICE_WINDOW_MS;
  if (offered.choices.length === 0) return { choices: [], since, capped: false };
  const { counts, capped } = await countAllowed(env.DB, { ...who, approvalId, since, now }, offered);
  return {
    choices: offered.choices.map(({ choice, match, sentence }, i) => ({
      choice,
      match,
      sentence,
      wouldHaveAllowed: counts[i] ?? 0,
    })),
    since,
    capped,
  };
}

/**
 * How many of the person's requests since `since` each offered rule would have allowed, had it
 * stood then: as a `me` rule of theirs, by the gate's test. `capped` when the scan stopped at
 * RULE_CHOICE_SCAN_MAX (each count is then a floor).
 */
async function countAllowed(
  db: D1Database,
  q: { teamId: string; userId: string; approvalId: string; since: number; now: number },
  offered: GateRuleChoices,
): Promise<{ counts: number[]; capped: boolean }> {
  const rules = offered.choices.map(({ choice, match }) => asStandingRule(choice, match, q.userId));
  const isHighRisk = highRiskTest(offered.highRisk);
  const counts = rules.map(() => 0);
  // Every choice keeps the exact rule's kind: a request of another kind matches none.
  const kind = offered.choices[0]?.match.kind ?? null;
  let before: PastRequest | null = null;
  for (let scanned = 0; scanned < RULE_CHOICE_SCAN_MAX; ) {
    const limit = Math.min(PAGE, RULE_CHOICE_SCAN_MAX - scanned);
    const page = await pastRequestsPage(db, {
      teamId: q.teamId,
      ownerUserId: q.userId,
      since: q.since,
      except: q.approvalId,
      kind,
      before: before && { createdAt: before.createdAt, id: before.id },
      limit,
    });
    for (const past of page) {
      const session = { sessionId: past.sessionId, ownerUserId: q.userId };
      // The match alone first (cheap); the gate's whole test (high-risk, cut, allow_once) only where it matches.
      const facts = ruleFacts(past.snapshot, past.sealed);
      rules.forEach((rule, i) => {
        if (!ruleMatches(rule.match, { facts, sessionId: past.sessionId })) return;
        if (allowingRule(isHighRisk, past, session, [rule], q.now)) counts[i] = (counts[i] ?? 0) + 1;
      });
    }
    scanned += page.length;
    if (page.length < limit) return { counts, capped: false };
    before = page[page.length - 1] ?? null;
  }
  return { counts, capped: true };
}

/** A choice as the standing `me` rule it would make, standing throughout the window. */
function asStandingRule(choice: string, match: RuleMatch, userId: string): StandingRule {
  return { id: choice, scope: "me", createdBy: { userId, name: "" }, match, expiresAt: Number.POSITIVE_INFINITY };
}
