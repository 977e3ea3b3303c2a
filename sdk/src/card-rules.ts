/**
 * The rules a card's "Allow for 1 h" may make, and which one a decision makes: this exact request
 * (`exact`: `derivedMatch`, every argument bound), this command in this folder and below
 * (`folder`: the command literally, in the request's cwd, leaving free only arguments that name
 * no path), or this program with any arguments (`program`: commands only, never a program a
 * high-risk pattern names or one that runs other commands). The gate decides with `cardRule`;
 * `GET /v1/approvals/:id/rule-choices` offers `cardRuleChoices` with `choiceSentence`.
 *
 * Owns: when a card may make a rule, the choices and their matches, and their sentences. Does not
 * own: what a match matches or its words (`rules.ts`), high-risk patterns (the caller's
 * `isHighRisk` and `riskyProgram`, `risk-match.ts`). Pure and environment-neutral.
 */
import type { Approval } from "./approval.js";
import type { RuleChoice, RuleMatch } from "./human/rules.js";
import { forbidsStandingAnswer } from "./permission-prompt.js";
import { argumentsBesideCommand, globLiteral, normalizeSpace } from "./request-match.js";
import {
  COMMAND_SPACE,
  coversEveryArgument,
  derivedMatch,
  describeMatch,
  type HighRiskTest,
  type RuleFacts,
  ruleFactsOf,
  ruleMatches,
} from "./rules.js";

/** A rule a card offers: which choice, and what its rule will match. */
export interface OfferedRule {
  choice: RuleChoice;
  match: RuleMatch;
}

/** Who asks for a card's rules, and the team's high-risk tests. */
export interface CardRuleAsk {
  deciderUserId: string;
  ownerUserId: string;
  isHighRisk: HighRiskTest;
  /** A program no card rule allows with any arguments (`risk-match.ts` `isRiskyProgram`); left out, none is offered. */
  riskyProgram?: (program: string) => boolean;
}

type CardApproval = Pick<Approval, "snapshot" | "options" | "sessionId" | "sealed" | "risk">;

/** A program word a rule can name: a plain name or path, no quoting, expansion, assignment or glob. */
const PROGRAM_WORD = /^[\w./@+:-]+$/;

/** The program a command runs, when it is a plain word followed by arguments; else null. */
function programOf(command: string): string | null {
  const [program, ...args] = normalizeSpace(command, COMMAND_SPACE).split(" ");
  return program !== undefined && args.length > 0 && PROGRAM_WORD.test(program) ? program : null;
}

/**
 * The choices for a request whose rules may be made, narrowest first; each matches the request
 * itself. `folder` only where it differs from `exact` (a command whose other arguments bind
 * the input); `program` only for a plain program word that `riskyProgram` does not refuse; neither
 * where an argument beside the command names a path, a location or a diff.
 */
function choicesOf(
  facts: RuleFacts,
  toolCall: Approval["snapshot"]["toolCall"],
  riskyProgram: (program: string) => boolean,
): OfferedRule[] {
  const exact = derivedMatch(facts);
  const offered: OfferedRule[] = [{ choice: "exact", match: exact }];
  const command = facts.command !== null && normalizeSpace(facts.command) !== "" ? facts.command : null;
  if (command === null) return offered;
  // Arguments a broader rule may leave free; null when one names a path (it could move the command out of its folder).
  const free = argumentsBesideCommand(toolCall);
  if (free === null) return offered;
  const { input, ...folder } = exact;
  if (input !== undefined && facts.cwd !== null) offered.push({ choice: "folder", match: folder });
  const program = programOf(command);
  if (program !== null && !riskyProgram(program)) {
    offered.push({ choice: "program", match: { ...folder, command: `${globLiteral(program)} *` } });
  }
  return offered.filter((o) => ruleMatches(o.match, { facts, sessionId: "" }));
}

/**
 * The rules a card may make from this request, or why none: it must offer `allow_once`, not ask
 * for no standing answer (`matchedAskRule`, `suppress_always_allow_rule`: the agent's user wants
 * to be asked each time), be in the decider's own session (a `me` rule covers only their own
 * sessions), and be neither high-risk nor cut. A high-risk request gets no rule at all, so
 * nothing broader either.
 */
export function cardRuleChoices(
  approval: CardApproval,
  c: CardRuleAsk,
): { ok: true; choices: OfferedRule[] } | { ok: false; message: string } {
  if (!approval.options.some((o) => o.kind === "allow_once")) {
    return { ok: false, message: "a rule is made only with an allow_once option" };
  }
  if (forbidsStandingAnswer(approval.snapshot.meta)) {
    return {
      ok: false,
      message: "the request asks for no standing answer (matchedAskRule, suppress_always_allow_rule)",
    };
  }
  if (c.deciderUserId !== c.ownerUserId) {
    return { ok: false, message: "a rule from a card covers your own sessions: only the session's owner makes one" };
  }
  const facts = ruleFactsOf(approval, c.isHighRisk);
  if (!facts) return { ok: false, message: "no rule allows a high-risk or truncated request" };
  // A private request: "this exact request" by its rule fingerprint, the one thing a rule reads of it.
  if (facts.sealed) {
    if (facts.fingerprint === null) {
      return { ok: false, message: "this private request has no rule fingerprint (its agent has no rule key)" };
    }
    return { ok: true, choices: [{ choice: "exact", match: { fingerprint: facts.fingerprint } }] };
  }
  return { ok: true, choices: choicesOf(facts, approval.snapshot.toolCall, c.riskyProgram ?? (() => true)) };
}

/**
 * The match of the rule a decision makes from its card, or why none may be made: the option
 * picked (`optionId`, else the request's) must be `allow_once`, the rule possible at all
 * (`cardRuleChoices`: else `rule_not_possible`), and `choice` (default `exact`) offered for this
 * request (else `rule_choice_not_offered`). A `match` sent with `exact` may narrow it, never
 * widen it: it must match this very request and no other arguments (`coversEveryArgument`).
 */
export function cardRule(
  approval: CardApproval,
  c: CardRuleAsk & { optionId?: string; choice?: RuleChoice; match?: RuleMatch },
):
  | { ok: true; match: RuleMatch }
  | { ok: false; error: "rule_not_possible" | "rule_choice_not_offered"; message: string } {
  const refused = (message: string) => ({ ok: false as const, error: "rule_not_possible" as const, message });
  const option = approval.options.find((o) =>
    c.optionId === undefined ? o.kind === "allow_once" : o.optionId === c.optionId,
  );
  if (option?.kind !== "allow_once") return refused("a rule is made only with an allow_once option");
  const possible = cardRuleChoices(approval, c);
  if (!possible.ok) return refused(possible.message);
  const choice = c.choice ?? "exact";
  const offered = possible.choices.find((o) => o.choice === choice);
  if (!offered) {
    const choices = possible.choices.map((o) => o.choice).join(", ");
    return {
      ok: false,
      error: "rule_choice_not_offered",
      message: `${choice} is not offered here (offered: ${choices})`,
    };
  }
  if (c.match === undefined) return { ok: true, match: offered.match };
  if (choice !== "exact") return refused("a match narrows only the exact choice");
  const facts = ruleFactsOf(approval, c.isHighRisk) as RuleFacts;
  if (!ruleMatches(c.match, { facts, sessionId: approval.sessionId })) {
    return refused("the rule's match does not match this request");
  }
  if (!coversEveryArgument(c.match, facts)) {
    return refused("a rule from a card allows only this request's exact arguments (its command or input)");
  }
  return { ok: true, match: c.match };
}

/**
 * What a choice allows, in one sentence for the card (`describeMatch`); a `folder` rule also
 * names the request's arguments it leaves free.
 */
export function choiceSentence(offered: OfferedRule, toolCall: Approval["snapshot"]["toolCall"]): string {
  const sentence = describeMatch(offered.match);
  if (offered.choice !== "folder") return sentence;
  const free = argumentsBesideCommand(toolCall) ?? [];
  return `${sentence} Its other arguments (${free.join(", ")}) may differ.`;
}
