/**
 * Standing rules in the SessionGate: whether a request that just arrived is allowed by one of
 * the rules the team's hub handed over with its admission (no human, reason `rule`), and
 * whether a decision may make a rule from the request it decides (the card's "Allow for 1 h").
 *
 * Owns: when a rule may allow (an offered `allow_once`, not high-risk under the session's
 * policy, nothing cut from what is stored, a rule that applies), and which rules a card may make
 * under the session's policy. Does not own: what a match matches or when a card may make one
 * (`sdk/src/rules.ts`, `sdk/src/card-rules.ts`), the rules (the hub's copy), or the transition
 * (state-machine.ts). Pure: no `cloudflare:workers`.
 */
import type { Approval } from "../../sdk/src/approval";
import { cardRule, cardRuleChoices, choiceSentence, type OfferedRule } from "../../sdk/src/card-rules";
import { DEFAULT_HIGH_RISK, type HighRiskPattern, type TeamPolicy } from "../../sdk/src/human/policy";
import type { RuleChoice, RuleMatch } from "../../sdk/src/human/rules";
import { forbidsStandingAnswer } from "../../sdk/src/permission-prompt";
import { isHighRisk, isRiskyProgram } from "../../sdk/src/risk-match";
import { applicableRule, type HighRiskTest, ruleFactsOf, type StandingRule } from "../../sdk/src/rules";
import type { Resolution } from "./rules";
import type { ServedSession } from "./store";

/** The session's high-risk patterns (a policy stored before they existed has the defaults). */
export const highRiskPatterns = (policy: TeamPolicy): HighRiskPattern[] => policy.highRisk ?? DEFAULT_HIGH_RISK;

/** High-risk under these patterns. */
export const highRiskTest =
  (patterns: readonly HighRiskPattern[]): HighRiskTest =>
  (facts) =>
    isHighRisk(patterns, facts);

/** The session a request was asked in, as a rule's scope reads it. */
export interface RuleSession {
  sessionId: string;
  ownerUserId: string;
}

/**
 * The rule of `rules` that allows this request on arrival, with the option it picks, or null
 * when a human must decide: an offered `allow_once`, nothing cut, not high-risk, a request that
 * does not refuse standing answers (`forbidsStandingAnswer`), and a rule that applies. The gate's own test, also used to count what a card's choice would have allowed.
 */
export function allowingRule(
  isHighRisk: HighRiskTest,
  approval: Pick<Approval, "snapshot" | "options" | "sealed" | "risk">,
  session: RuleSession,
  rules: readonly StandingRule[],
  now: number,
): { rule: StandingRule; optionId: string } | null {
  // The agent's user asked to be asked each time (`matchedAskRule`, `suppress_always_allow_rule`).
  if (rules.length === 0 || forbidsStandingAnswer(approval.snapshot.meta)) return null;
  const allowOnce = approval.options.find((o) => o.kind === "allow_once");
  const facts = allowOnce && ruleFactsOf(approval, isHighRisk);
  if (!allowOnce || !facts) return null;
  const rule = applicableRule(rules, { facts, sessionId: session.sessionId, ownerUserId: session.ownerUserId }, now);
  return rule && { rule, optionId: allowOnce.optionId };
}

/** The resolution a standing rule gives a new approval, or null when a human must decide. */
export function ruleResolution(
  meta: ServedSession,
  approval: Approval,
  rules: readonly StandingRule[],
  now: number,
): Resolution | null {
  const test = highRiskTest(highRiskPatterns(meta.policy));
  const allowed = allowingRule(test, approval, meta, rules, now);
  if (!allowed) return null;
  const { rule, optionId } = allowed;
  return { state: "allowed", reason: "rule", optionId, rule: { id: rule.id, createdBy: rule.createdBy } };
}

/** What a card's rule is checked with: the session's owner and its policy's high-risk tests. */
function cardAsk(meta: ServedSession, userId: string) {
  const patterns = highRiskPatterns(meta.policy);
  return {
    deciderUserId: userId,
    ownerUserId: meta.ownerUserId,
    isHighRisk: highRiskTest(patterns),
    riskyProgram: (program: string) => isRiskyProgram(patterns, program),
  };
}

/** The rules this person's card may make from a pending request, with their sentences (none where no rule may be made). */
export function offeredRules(
  meta: ServedSession,
  approval: Approval,
  userId: string,
): Array<OfferedRule & { sentence: string }> {
  if (approval.state !== "pending" || approval.type === "elicitation") return [];
  const possible = cardRuleChoices(approval, cardAsk(meta, userId));
  if (!possible.ok) return [];
  return possible.choices.map((o) => ({ ...o, sentence: choiceSentence(o, approval.snapshot.toolCall) }));
}

/** The match of the rule a decision makes from its card, or why it may not (`sdk/src/card-rules.ts` `cardRule`). */
export function cardRuleMatch(
  meta: ServedSession,
  approval: Approval,
  d: { userId: string; optionId: string; choice?: RuleChoice; match?: RuleMatch },
) {
  return cardRule(approval, {
    ...cardAsk(meta, d.userId),
    optionId: d.optionId,
    ...(d.choice && { choice: d.choice }),
    ...(d.match && { match: d.match }),
  });
}
