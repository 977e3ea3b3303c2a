/**
 * What a standing rule matches, once: the SessionGate matches requests with `ruleAllows` when
 * they arrive, the Worker derives a card's rule with `derivedMatch`, and the PWA's card and
 * Rules screen describe a match with `describeMatch`, so the preview says exactly what the gate
 * will do. Reads requests through `requestFacts` and compares with `globMatch` (request-match.ts).
 * A card's exact rule binds every argument of its request: its command literally, or the
 * request's input fingerprint (`inputFingerprint`); the broader choices a card offers are
 * `card-rules.ts`'s.
 *
 * Owns: the meaning of a match, its scope and expiry, and the words for it. Does not own: which
 * rules exist (the hub's copy, D1's record), high-risk patterns (the caller passes its `isHighRisk`
 * first), or what an allowed request does. Pure and environment-neutral.
 */
import type { Approval, ApprovalSnapshot, Owner } from "./approval.js";
import { canonicalJson } from "./canonical-json.js";
import type { RuleMatch, RuleScope } from "./human/rules.js";
import {
  commandCoversInput,
  globLiteral,
  globMatch,
  inputFingerprint,
  normalizeSpace,
  pathWithin,
  type RequestFacts,
  requestFacts,
  requestInput,
} from "./request-match.js";

/** A rule as the gate gets it from the team's hub: what it needs to match, nothing more. */
export interface StandingRule {
  id: string;
  scope: RuleScope;
  createdBy: Owner;
  match: RuleMatch;
  expiresAt: number;
}

/**
 * What a rule reads of a request: its facts, the fingerprint of its arguments, whether its command
 * is all of them; for a private request (`sealed`) its rule fingerprint (null when the SDK had no
 * rule key), the only thing a rule may match it by.
 */
export interface RuleFacts extends RequestFacts {
  input: string;
  commandCoversInput: boolean;
  sealed: boolean;
  fingerprint: string | null;
}

export function ruleFacts(snapshot: ApprovalSnapshot, sealed?: { fingerprint?: string | undefined }): RuleFacts {
  const { toolCall } = snapshot;
  return {
    ...requestFacts(snapshot),
    input: inputFingerprint(toolCall),
    commandCoversInput: commandCoversInput(toolCall),
    sealed: sealed !== undefined,
    fingerprint: sealed?.fingerprint ?? null,
  };
}

/** The request a rule is tried on: its facts, its session and whose session it is. */
export interface RuleTarget {
  facts: RuleFacts;
  sessionId: string;
  ownerUserId: string;
}

/**
 * Characters that chain, pipe, redirect or substitute in a shell. A command holding one is
 * matched only by a `command` with no wildcard (exactly), so `git status*` never covers
 * `git status; curl … | sh`.
 */
const SHELL_CONTROL = /[;&|<>`\n\r]|\$\(/;

/** In a command a line break ends a command, so `a b` never matches `a⏎b` (nor a rule made from one the other). */
export const COMMAND_SPACE = { lineBreaks: true } as const;

/** Whether `glob` has a `*` or `?` that is not escaped. */
export function hasWildcard(glob: string): boolean {
  for (let i = 0; i < glob.length; i++) {
    if (glob[i] === "\\") i++;
    else if (glob[i] === "*" || glob[i] === "?") return true;
  }
  return false;
}

/** A path with a `.` or `..` segment could leave any prefix it seems to be within: never matched. */
function hasDotSegment(path: string): boolean {
  return path.split(/[\\/]/).some((segment) => segment === "." || segment === "..");
}

/**
 * Whether `match` matches the request: every field it names must match (case-sensitive),
 * and a fact the request lacks never matches. `command` is a glob over the whole command
 * (wildcards never over shell control characters, see above); a match without `command`
 * matches only requests that carry no command, so a title cannot stand in for one. `title` is
 * a glob, `cwd` a path prefix (no `.`/`..` segments), `kind`, `host`, `agent`, `sessionId` and
 * `input` (the fingerprint of every argument) are exact. A private request is matched only by
 * its rule `fingerprint`, exactly, and a `fingerprint` match only a private request: a glob
 * never matches a request whose text the service cannot read.
 */
export function ruleMatches(match: RuleMatch, target: Omit<RuleTarget, "ownerUserId">): boolean {
  const { facts } = target;
  if (facts.sealed || match.fingerprint !== undefined) {
    return facts.sealed && facts.fingerprint !== null && match.fingerprint === facts.fingerprint;
  }
  const exact = (want: string | undefined, have: string | null) => want === undefined || want === have;
  if (!exact(match.kind, facts.kind) || !exact(match.host, facts.host) || !exact(match.agent, facts.agent)) {
    return false;
  }
  if (match.sessionId !== undefined && match.sessionId !== target.sessionId) return false;
  if (match.input !== undefined && match.input !== facts.input) return false;
  if (match.title !== undefined && (facts.title === null || !globMatch(match.title, facts.title))) return false;
  if (match.cwd !== undefined) {
    if (facts.cwd === null || hasDotSegment(facts.cwd) || !pathWithin(facts.cwd, match.cwd)) return false;
  }
  if (match.command === undefined) return facts.command === null;
  if (facts.command === null) return false;
  if (hasWildcard(match.command) && SHELL_CONTROL.test(facts.command)) return false;
  return globMatch(match.command, facts.command, COMMAND_SPACE);
}

/** Whether the rule may apply to this request at `now`: standing, in scope, and matching. */
export function ruleApplies(rule: StandingRule, target: RuleTarget, now: number): boolean {
  if (rule.expiresAt <= now) return false;
  if (rule.scope === "me" && rule.createdBy.userId !== target.ownerUserId) return false;
  return ruleMatches(rule.match, target);
}

/** The first rule that applies (oldest first, as the hub lists them), or null. */
export function applicableRule(rules: readonly StandingRule[], target: RuleTarget, now: number): StandingRule | null {
  return rules.find((rule) => ruleApplies(rule, target, now)) ?? null;
}

/**
 * The match a card's "Allow for 1 h" makes: the same kind, cwd and host, and every argument: the
 * same command kept literal where the command is all of the request's arguments
 * (`commandCoversInput`), else the input fingerprint (with the title, for people to read).
 */
export function derivedMatch(facts: RuleFacts): RuleMatch {
  if (facts.sealed && facts.fingerprint !== null) return { fingerprint: facts.fingerprint };
  const named =
    facts.command !== null && normalizeSpace(facts.command) !== ""
      ? { command: globLiteral(facts.command, COMMAND_SPACE) }
      : facts.title !== null && normalizeSpace(facts.title) !== ""
        ? { title: globLiteral(facts.title) }
        : {};
  const bindsInput = !("command" in named) || !facts.commandCoversInput;
  return {
    ...(facts.kind !== null && { kind: facts.kind }),
    ...named,
    ...(bindsInput && { input: facts.input }),
    ...(facts.cwd !== null && { cwd: facts.cwd }),
    ...(facts.host !== null && { host: facts.host }),
  };
}

/**
 * Whether `match` allows no other arguments than this request's (it must match the request too):
 * a command literally (no wildcard) with the input fingerprint wherever the command is not all
 * of the arguments, else the input fingerprint.
 */
export function coversEveryArgument(match: RuleMatch, facts: RuleFacts): boolean {
  if (facts.sealed) return match.fingerprint !== undefined && match.fingerprint === facts.fingerprint;
  if (facts.command === null) return match.input !== undefined;
  if (match.command === undefined || hasWildcard(match.command)) return false;
  return facts.commandCoversInput || match.input !== undefined;
}

/**
 * Whether a request is high-risk under the team's policy: `isHighRisk` of `risk-match.ts` over
 * the patterns, passed in so that this module (and the PWA's card) does not carry the shell parser.
 */
export type HighRiskTest = (facts: RequestFacts) => boolean;

/**
 * What of a request a rule reads, or null when no rule may touch it: its card was cut to the
 * stored-bytes limit (what a rule would need could be missing), or it is high-risk (a private
 * request by the tier its SDK computed: the patterns need the plaintext).
 */
export function ruleFactsOf(
  approval: Pick<Approval, "snapshot" | "sealed" | "risk">,
  isHighRisk: HighRiskTest,
): RuleFacts | null {
  if (approval.sealed) return approval.risk === "high" ? null : ruleFacts(approval.snapshot, approval.sealed);
  if (approval.snapshot.truncated) return null;
  if (isHighRisk(requestFacts(approval.snapshot))) return null;
  return ruleFacts(approval.snapshot);
}

/** A glob for people: literal text quoted as is, a pattern marked as one. */
function globWords(glob: string): string {
  return hasWildcard(glob) ? `matching “${glob}”` : `“${glob.replace(/\\(.)/g, "$1")}”`;
}

/**
 * One sentence saying what a match allows, for the card's preview and the Rules screen, e.g.
 * `Allows execute requests running exactly “npm test” in /repo (or below) on host “laptop”.`
 */
export function describeMatch(match: RuleMatch, scope: RuleScope = "me"): string {
  const whose = scope === "team" ? "in anyone's sessions" : "in your own sessions";
  if (match.fingerprint !== undefined) {
    return `Allows exactly this private request again (the same kind, command, folder and host; fingerprint ${match.fingerprint.slice(0, 12)}…), ${whose}, unless high-risk.`;
  }
  const parts: string[] = [];
  parts.push(match.kind ? `${match.kind} requests` : "requests of any kind");
  if (match.command !== undefined) {
    parts.push(
      hasWildcard(match.command)
        ? `running a command ${globWords(match.command)} (no ; & | < > \` or $( in it)`
        : `running exactly ${globWords(match.command)}`,
    );
  } else {
    parts.push("that run no command");
  }
  if (match.title !== undefined) parts.push(`titled ${globWords(match.title)}`);
  if (match.input !== undefined)
    parts.push(`with exactly the arguments it was made from (input ${match.input.slice(0, 12)}…)`);
  if (match.cwd !== undefined) parts.push(`in ${match.cwd} (or below)`);
  if (match.host !== undefined) parts.push(`on host “${match.host}”`);
  if (match.agent !== undefined) parts.push(`from agent “${match.agent}”`);
  if (match.sessionId !== undefined) parts.push(`in session ${match.sessionId}`);
  return `Allows ${parts.join(" ")}, ${whose}, unless high-risk.`;
}

/** How much of a request's arguments a card rule keeps to show on the Rules screen (`Rule.arguments`). */
export const RULE_ARGUMENTS_CHARS = 4096;

/** A request's arguments as people read them, one per line: `key: value`, then locations and diffs. */
export function argumentLines(toolCall: ApprovalSnapshot["toolCall"]): string[] {
  const { rawInput, locations, diffs } = requestInput(toolCall);
  const shown = (v: unknown) => (typeof v === "string" ? v : canonicalJson(v));
  const lines =
    rawInput && typeof rawInput === "object" && !Array.isArray(rawInput)
      ? Object.entries(rawInput).map(([key, value]) => `${key}: ${shown(value)}`)
      : rawInput === null
        ? []
        : [`input: ${shown(rawInput)}`];
  for (const l of locations) lines.push(`location: ${shown(l.path)}${typeof l.line === "number" ? `:${l.line}` : ""}`);
  for (const d of diffs) lines.push(`writes ${shown(d.path)}: ${shown(d.newText)}`);
  return lines;
}

/** Text cut to `max` characters (code points), marked with `…` when cut. */
function cut(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : `${chars.slice(0, max).join("")}…`;
}

/**
 * `argumentLines` as one text, cut to `maxChars` with a note of how much is left out: the Rules
 * screen says with it what a rule's input fingerprint allows (`Rule.arguments`).
 */
export function argumentsText(toolCall: ApprovalSnapshot["toolCall"], maxChars = RULE_ARGUMENTS_CHARS): string {
  const text = argumentLines(toolCall).join("\n") || "(no arguments)";
  const over = Array.from(text).length - maxChars;
  return over <= 0 ? text : `${cut(text, maxChars)} (${over} more characters: the whole input is on the request)`;
}

/**
 * The words of a card's rule button: what one click allows for 1 h, e.g. `Allow “npm test” for
 * 1 h` or `Allow web_fetch (prompt: “Summarize https://…”, …) for 1 h, exactly these arguments`.
 */
export function ruleOfferLabel(facts: RequestFacts, match: RuleMatch, toolCall: ApprovalSnapshot["toolCall"]): string {
  if (facts.command !== null && match.input === undefined) return `Allow “${facts.command}” for 1 h`;
  const tool =
    facts.command !== null ? `“${facts.command}”` : (facts.title?.split(": ")[0] ?? facts.kind ?? "this tool");
  const [first, ...more] = facts.command !== null ? [] : argumentLines(toolCall);
  const args = first === undefined ? "" : ` (${cut(first.replace(/: /, ": “"), 80)}”${more.length > 0 ? ", …" : ""})`;
  return `Allow ${tool}${args} for 1 h, exactly these arguments`;
}
