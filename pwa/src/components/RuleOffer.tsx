/**
 * The card's "Allow for 1 h": beside "Allow once", where a rule is possible (the request offers
 * `allow_once`, it is in your own session, it is not high-risk under the team's policy, nothing
 * of it was cut, and the rule binds every argument), labelled with what one click allows
 * ("Allow web_fetch (prompt: “…”) for 1 h, exactly these arguments") and a sentence saying
 * exactly what the rule will match. The offer and the words come from `sdk/src/rules.ts`, the
 * same code the gate decides and matches with.
 *
 * Owns: the button and its preview. Does not own: the decision (the card's `onChoose`) or
 * whether the server agrees (it checks again: `409 rule_not_possible`).
 */
import { useEffect, useMemo, useState } from "preact/hooks";
import { RULE_DEFAULT_MS } from "../../../sdk/src/human/rules";
import { requestFacts } from "../../../sdk/src/request-match";
import { argumentsText, cardRule, describeMatch, type HighRiskTest, ruleOfferLabel } from "../../../sdk/src/rules";
import { type ApprovalView, api, type RuleMatch } from "../api";
import { useMe } from "../viewer";
import { SafeText } from "./SafeText";

/**
 * High-risk under the team's patterns, the gate's own test: the patterns read once per page load,
 * with the matcher (and its shell parser, a chunk of its own) loaded beside them. Null until
 * both are here: no offer before.
 */
let highRisk: Promise<HighRiskTest> | null = null;
function useHighRisk(): HighRiskTest | null {
  const [test, setTest] = useState<{ isHighRisk: HighRiskTest } | null>(null);
  useEffect(() => {
    highRisk ??= Promise.all([api.policy(), import("../../../sdk/src/risk-match")]).then(
      ([policy, matcher]) =>
        (facts) =>
          matcher.isHighRisk(policy.highRisk, facts),
    );
    highRisk.then(
      (isHighRisk) => setTest({ isHighRisk }),
      () => {
        highRisk = null;
      },
    );
  }, []);
  return test?.isHighRisk ?? null;
}

export function RuleOffer({
  approval,
  busy,
  onAllowWithRule,
}: {
  approval: ApprovalView;
  busy: string | null;
  onAllowWithRule: (optionId: string, rule: { expiresInMs: number; match: RuleMatch }) => void;
}) {
  const me = useMe();
  const isHighRisk = useHighRisk();
  const allowOnce = approval.options.find((o) => o.kind === "allow_once");
  const userId = me?.user.id;
  // cardRule hashes the request's arguments: once per request, not once per render.
  const offer = useMemo(
    () =>
      userId && isHighRisk && approval.owner
        ? cardRule(approval, { deciderUserId: userId, ownerUserId: approval.owner.userId, isHighRisk })
        : null,
    [approval, userId, isHighRisk],
  );
  if (!allowOnce || !offer?.ok) return null;
  const { toolCall } = approval.snapshot;
  const label = ruleOfferLabel(requestFacts(approval.snapshot), offer.match, toolCall);
  const preview =
    offer.match.input === undefined
      ? describeMatch(offer.match)
      : `${describeMatch(offer.match)} Exactly these arguments:\n${argumentsText(toolCall, 600)}`;
  return (
    <button
      type="button"
      class="option allow rule-offer"
      disabled={busy !== null}
      aria-busy={busy === "rule"}
      onClick={() => onAllowWithRule(allowOnce.optionId, { expiresInMs: RULE_DEFAULT_MS, match: offer.match })}
      data-testid="option-allow-rule"
    >
      {/* The label and the match quote the agent's own text: shown as safe text, like the request itself. */}
      <span data-testid="option-label">
        <SafeText text={label} />
      </span>
      <span class="option-note" data-testid="rule-preview">
        <SafeText text={preview} />
      </span>
    </button>
  );
}
