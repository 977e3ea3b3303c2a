/**
 * Standing rules in the SessionGate, pure: whether a request that just arrived is allowed by one
 * of the rules the team's hub handed over with its admission (no human, reason `rule`), and
 * whether a decision may make a rule from the request it decides (the card's "Allow for 1 h").
 *
 * Owns: when a rule may allow (an offered `allow_once`, not high-risk, nothing cut from what is
 * stored, a rule that applies) and when a card may make one. Does not own: what a match matches
 * (`sdk/src/rules.ts`), the rules (the hub's copy), or the transition (state-machine.ts).
 * Imports no `cloudflare:workers`, so it is unit-tested under Node.
 */
import type { Approval } from "../../sdk/src/approval";
import { DEFAULT_HIGH_RISK, type TeamPolicy } from "../../sdk/src/human/policy";
import type { RuleMatch } from "../../sdk/src/human/rules";
import { isHighRisk, type RequestFacts, requestFacts } from "../../sdk/src/request-match";
import { applicableRule, derivedMatch, ruleMatches, type StandingRule } from "../../sdk/src/rules";
import type { Resolution } from "./rules";
import type { ServedSession } from "./store";

/** What of a request a rule reads, or null when no rule may touch it: cut, or high-risk under the policy. */
function ruleFacts(policy: TeamPolicy, approval: Approval): RequestFacts | null {
  // A card cut to the stored-bytes limit could hide what a rule would need to see.
  if (approval.snapshot.truncated) return null;
  const facts = requestFacts(approval.snapshot);
  return isHighRisk(policy.highRisk ?? DEFAULT_HIGH_RISK, facts) ? null : facts;
}

/** The resolution a standing rule gives a new approval, or null when a human must decide. */
export function ruleResolution(
  meta: ServedSession,
  approval: Approval,
  rules: readonly StandingRule[],
  now: number,
): Resolution | null {
  if (rules.length === 0) return null;
  const allowOnce = approval.options.find((o) => o.kind === "allow_once");
  const facts = allowOnce && ruleFacts(meta.policy, approval);
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

/**
 * The match of the rule a decision makes from its card, or why it may not: the option must be
 * `allow_once`, the decider the session's owner (a `me` rule covers only their own sessions),
 * the request not high-risk, and the match (derived unless given) must match this request.
 */
export function cardRuleMatch(
  meta: ServedSession,
  approval: Approval,
  d: { userId: string; optionId: string; match?: RuleMatch },
): { ok: true; match: RuleMatch } | { ok: false; message: string } {
  const option = approval.options.find((o) => o.optionId === d.optionId);
  if (option?.kind !== "allow_once") return { ok: false, message: "a rule is made only with an allow_once option" };
  if (d.userId !== meta.ownerUserId) {
    return { ok: false, message: "a rule from a card covers your own sessions: only the session's owner makes one" };
  }
  const facts = ruleFacts(meta.policy, approval);
  if (!facts) return { ok: false, message: "no rule allows a high-risk or truncated request" };
  const match = d.match ?? derivedMatch(facts);
  if (!match) return { ok: false, message: "this request has no command or title to match" };
  if (!ruleMatches(match, { facts, sessionId: meta.sessionId })) {
    return { ok: false, message: "the rule's match does not match this request" };
  }
  return { ok: true, match };
}
