/**
 * Standing rules in the SessionGate: whether a request that just arrived is allowed by one of
 * the rules the team's hub handed over with its admission (no human, reason `rule`), and
 * whether a decision may make a rule from the request it decides (the card's "Allow for 1 h").
 *
 * Owns: when a rule may allow (an offered `allow_once`, not high-risk under the session's
 * policy, nothing cut from what is stored, a rule that applies). Does not own: what a match
 * matches or when a card may make one (`sdk/src/rules.ts`, shared with the PWA's card), the
 * rules (the hub's copy), or the transition (state-machine.ts). Pure: no `cloudflare:workers`.
 */
import type { Approval } from "../../sdk/src/approval";
import { DEFAULT_HIGH_RISK, type TeamPolicy } from "../../sdk/src/human/policy";
import type { RuleMatch } from "../../sdk/src/human/rules";
import { isHighRisk } from "../../sdk/src/risk-match";
import { applicableRule, cardRule, type HighRiskTest, ruleFactsOf, type StandingRule } from "../../sdk/src/rules";
import type { Resolution } from "./rules";
import type { ServedSession } from "./store";

/** High-risk under the session's patterns (a policy stored before they existed has the defaults). */
const highRiskTest =
  (policy: TeamPolicy): HighRiskTest =>
  (facts) =>
    isHighRisk(policy.highRisk ?? DEFAULT_HIGH_RISK, facts);

/** The resolution a standing rule gives a new approval, or null when a human must decide. */
export function ruleResolution(
  meta: ServedSession,
  approval: Approval,
  rules: readonly StandingRule[],
  now: number,
): Resolution | null {
  if (rules.length === 0) return null;
  const allowOnce = approval.options.find((o) => o.kind === "allow_once");
  const facts = allowOnce && ruleFactsOf(approval, highRiskTest(meta.policy));
  if (!allowOnce || !facts) return null;
  const rule = applicableRule(rules, { facts, sessionId: meta.sessionId, ownerUserId: meta.ownerUserId }, now);
  if (!rule) return null;
  return {
    state: "allowed",
    reason: "rule",
    optionId: allowOnce.optionId,
    rule: { id: rule.id, createdBy: rule.createdBy },
  };
}

/** The match of the rule a decision makes from its card, or why it may not (`sdk/src/rules.ts` `cardRule`). */
export function cardRuleMatch(
  meta: ServedSession,
  approval: Approval,
  d: { userId: string; optionId: string; match?: RuleMatch },
) {
  return cardRule(approval, {
    deciderUserId: d.userId,
    ownerUserId: meta.ownerUserId,
    isHighRisk: highRiskTest(meta.policy),
    optionId: d.optionId,
    ...(d.match && { match: d.match }),
  });
}
