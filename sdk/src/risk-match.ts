/**
 * What a high-risk pattern (team policy `highRisk`, docs/state-machine.md "Risk tiers") matches:
 * `kind` and `title` as globs, `command` on the whole line and every simple command the shell
 * would run in it (`readShell`), `writes` on every path the request may write, `input` on every
 * string of its `rawInput`; all ignoring case.
 *
 * Owns: `isHighRisk` and its path matching. Does not own: the facts of a request or the glob
 * (`request-match.ts`), reading the shell (`shell/commands.ts`), or what `high` changes (the
 * gate's `risk.ts`, rules). Pure and environment-neutral; it brings the shell parser, so the
 * PWA loads it lazily (`components/RuleOffer.tsx`).
 */
import type { HighRiskPattern } from "./human/policy.js";
import { globMatch, normalizeSpace, type RequestFacts } from "./request-match.js";
import { readShell, type ShellReading } from "./shell/commands.js";
import { runsOtherCommands } from "./shell/inner.js";

/**
 * Whether a request is high-risk under these patterns (ignoring case; a fact the request lacks
 * never matches). The command is read once, and only when a pattern needs it.
 */
export function isHighRisk(patterns: readonly HighRiskPattern[], facts: RequestFacts): boolean {
  let reading: ShellReading | null | undefined;
  const shell = () => {
    if (reading === undefined) reading = facts.command === null ? null : readShell(facts.command);
    return reading;
  };
  return patterns.some((pattern) => riskPatternMatches(pattern, facts, shell));
}

/**
 * Whether no card rule may allow this program with any arguments: a high-risk `command` pattern
 * names it (the pattern's first word, a glob, matches the program or its file name, ignoring
 * case: `git` for `git push --force*`), it runs other commands (`sudo`, `bash`, `env`, …), or
 * it is chosen at run time (`$TOOL`).
 */
export function isRiskyProgram(patterns: readonly HighRiskPattern[], program: string): boolean {
  const name = program.slice(program.lastIndexOf("/") + 1);
  // A program chosen at run time (`$TOOL`) may be any program.
  if (runsOtherCommands(name) || /[$`]/.test(name)) return true;
  return patterns.some((pattern) => {
    const first = pattern.command === undefined ? undefined : normalizeSpace(pattern.command).split(" ")[0];
    return first !== undefined && (matchesIgnoringCase(first, name) || matchesIgnoringCase(first, program));
  });
}

const matchesIgnoringCase = (pattern: string, text: string) => globMatch(pattern, text, { ignoreCase: true });

function riskPatternMatches(pattern: HighRiskPattern, facts: RequestFacts, shell: () => ShellReading | null): boolean {
  const glob = (p: string, text: string | null) => text !== null && matchesIgnoringCase(p, text);
  if (pattern.kind !== undefined && !glob(pattern.kind, facts.kind)) return false;
  if (pattern.title !== undefined && !glob(pattern.title, facts.title)) return false;
  if (pattern.input !== undefined) {
    const input = pattern.input;
    if (!facts.inputs.some((text) => matchesIgnoringCase(input, text))) return false;
  }
  if (pattern.command !== undefined && !commandMatches(pattern.command, facts.command, shell())) return false;
  if (pattern.writes !== undefined && !writesMatch(pattern.writes, facts.writes, shell())) return false;
  return true;
}

/**
 * A command pattern matches the whole command line or any simple command in it (`readShell`);
 * a script that could not be parsed matches when the pattern appears anywhere in it, and a
 * command whose program is chosen at run time when its arguments match the pattern's.
 */
function commandMatches(pattern: string, command: string | null, reading: ShellReading | null): boolean {
  if (command === null || reading === null) return false;
  if (matchesIgnoringCase(pattern, command)) return true;
  if (reading.commands.some((text) => matchesIgnoringCase(pattern, text))) return true;
  if (reading.opaque.some((text) => appearsIn(pattern, text))) return true;
  if (reading.chosenAtRunTime.length === 0) return false;
  // A program chosen at run time may be the pattern's: its arguments decide.
  const [, ...args] = normalizeSpace(pattern).split(" ");
  const argsPattern = args.join(" ");
  return reading.chosenAtRunTime.some((text) => matchesIgnoringCase(argsPattern, text));
}

/** A writes pattern matches any path written, by the tool call or by its command's redirections. */
function writesMatch(pattern: string, writes: readonly string[], reading: ShellReading | null): boolean {
  const paths = reading ? [...writes, ...reading.writes] : writes;
  if (paths.some((path) => pathMatches(pattern, path))) return true;
  return reading?.opaque.some((text) => appearsIn(pattern, text)) ?? false;
}

/**
 * Whether the glob matches the path or any tail of it after a `/`, so `.ssh/*` matches
 * `/home/ada/.ssh/config` and `~/.ssh/config`; a pattern starting with `/` matches from the root
 * only. The path is normalized first: `\` as `/`, no empty, `.` or `..` segments.
 */
export function pathMatches(pattern: string, path: string): boolean {
  const normal = normalizePath(path);
  if (matchesIgnoringCase(pattern, normal)) return true;
  for (let i = normal.indexOf("/"); i !== -1; i = normal.indexOf("/", i + 1)) {
    if (matchesIgnoringCase(pattern, normal.slice(i + 1))) return true;
  }
  return false;
}

function normalizePath(path: string): string {
  const out: string[] = [];
  for (const segment of path.replace(/\\/g, "/").split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === ".." && out.length > 0 && out.at(-1) !== "..") out.pop();
    else out.push(segment);
  }
  return (path.startsWith("/") || path.startsWith("\\") ? "/" : "") + out.join("/");
}

/**
 * Whether the glob matches somewhere inside text that could not be parsed: as written, and with
 * quotes and backslashes removed (`git push "--force"` inside a line the parser refused).
 */
function appearsIn(pattern: string, text: string): boolean {
  const anywhere = `*${pattern.replace(/\\$/, "")}*`;
  return matchesIgnoringCase(anywhere, text) || matchesIgnoringCase(anywhere, text.replace(/["'\\]/g, ""));
}
