/**
 * The card's "Allow for 1 h": beside "Allow once", where the server offers a rule from this
 * request (`GET /v1/approvals/:id/rule-choices`: your own session, `allow_once` offered, not
 * high-risk, nothing cut, no `matchedAskRule`). Before the click it shows each choice (this exact request, this
 * command in this folder and below, this program with any arguments) with the sentence saying
 * what its rule matches and how many of your requests of the last 7 days it would have allowed;
 * the button makes the chosen one.
 *
 * Owns: the choices, the button and its preview. Does not own: which choices a request gets,
 * their words and counts (the server, `sdk/src/card-rules.ts`), or the decision (the card's
 * `onChoose`; the server checks the choice again: `409 rule_choice_not_offered`).
 */
import { useEffect, useState } from "preact/hooks";
import { RULE_DEFAULT_MS } from "../../../sdk/src/human/rules";
import { requestFacts } from "../../../sdk/src/request-match";
import { argumentsText, ruleOfferLabel } from "../../../sdk/src/rules";
import { type ApprovalView, api, type RuleChoice, type RuleChoices } from "../api";
import { SafeText } from "./SafeText";

type Offered = RuleChoices["choices"][number];

const CHOICE_NAMES: Record<RuleChoice, string> = {
  exact: "Exactly this request",
  folder: "This command in this folder and below",
  program: "This program with any arguments",
};

/** What one click allows for 1 h, e.g. `Allow “npm” with any arguments for 1 h`. */
function buttonLabel(approval: ApprovalView, offered: Offered): string {
  const facts = requestFacts(approval.snapshot);
  if (offered.choice === "exact") return ruleOfferLabel(facts, offered.match, approval.snapshot.toolCall);
  if (offered.choice === "folder") return `Allow “${facts.command}” in ${facts.cwd} and below for 1 h`;
  return `Allow “${facts.command?.trim().split(/\s+/)[0]}” with any arguments for 1 h`;
}

function countWords(offered: Offered, capped: boolean): string {
  const n = offered.wouldHaveAllowed;
  const requests = n === 1 ? "request" : "requests";
  return `Would have allowed ${capped ? "at least " : ""}${n} ${requests} of yours in the last 7 days`;
}

/** The server's choices for this request, loaded once per request; null until they are here (no offer before). */
function useRuleChoices(approvalId: string): RuleChoices | null {
  const [loaded, setLoaded] = useState<{ id: string; choices: RuleChoices } | null>(null);
  useEffect(() => {
    let live = true;
    api.ruleChoices(approvalId).then(
      (choices) => live && setLoaded({ id: approvalId, choices }),
      () => undefined, // no offer: Allow once and Deny remain
    );
    return () => {
      live = false;
    };
  }, [approvalId]);
  return loaded?.id === approvalId ? loaded.choices : null;
}

export function RuleOffer({
  approval,
  busy,
  onAllowWithRule,
}: {
  approval: ApprovalView;
  busy: string | null;
  onAllowWithRule: (optionId: string, rule: { expiresInMs: number; choice: RuleChoice }) => void;
}) {
  const loaded = useRuleChoices(approval.id);
  const [picked, setPicked] = useState<RuleChoice>("exact");
  const allowOnce = approval.options.find((o) => o.kind === "allow_once");
  const offered = loaded?.choices.find((o) => o.choice === picked) ?? loaded?.choices[0];
  if (!allowOnce || !loaded || !offered) return null;
  const { toolCall } = approval.snapshot;
  const preview =
    offered.match.input === undefined
      ? offered.sentence
      : `${offered.sentence} Exactly these arguments:\n${argumentsText(toolCall, 600)}`;
  return (
    <div class="rule-offer-group" data-testid="rule-offer">
      {loaded.choices.length > 1 && (
        <fieldset class="rule-choices" data-testid="rule-choices">
          <legend>What Allow for 1 h allows</legend>
          {loaded.choices.map((o) => (
            <label key={o.choice} class="rule-choice" data-testid={`rule-choice-${o.choice}`}>
              <input
                type="radio"
                name={`rule-choice-${approval.id}`}
                value={o.choice}
                checked={o.choice === offered.choice}
                onChange={() => setPicked(o.choice)}
              />
              <span>
                <strong>{CHOICE_NAMES[o.choice]}</strong>
                <span class="rule-choice-sentence" data-testid="rule-choice-sentence">
                  <SafeText text={o.sentence} />
                </span>
                <span class="rule-choice-count" data-testid="rule-choice-count">
                  {countWords(o, loaded.capped)}
                </span>
              </span>
            </label>
          ))}
        </fieldset>
      )}
      <button
        type="button"
        class="option allow rule-offer"
        disabled={busy !== null}
        aria-busy={busy === "rule"}
        onClick={() => onAllowWithRule(allowOnce.optionId, { expiresInMs: RULE_DEFAULT_MS, choice: offered.choice })}
        data-testid="option-allow-rule"
        data-choice={offered.choice}
      >
        {/* The label and the match quote the agent's own text: shown as safe text, like the request itself. */}
        <span data-testid="option-label">
          <SafeText text={buttonLabel(approval, offered)} />
        </span>
        <span class="option-note" data-testid="rule-preview">
          <SafeText text={preview} />
        </span>
        {loaded.choices.length === 1 && (
          <span class="option-note" data-testid="rule-choice-count">
            {countWords(offered, loaded.capped)}
          </span>
        )}
      </button>
    </div>
  );
}
