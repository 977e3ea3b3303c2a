/**
 * What a request is, for matching, and the one glob every matcher uses: standing rules (the
 * gate, when a request arrives), high-risk patterns (the team policy) and a rule's preview on
 * the card all read a request through `requestFacts` and compare with `globMatch`.
 *
 * Owns: the facts of a request and glob matching. Does not own: which rules or patterns exist,
 * or what a match does. Pure and environment-neutral: the Worker, the PWA and the SDK import it.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import type { ApprovalSnapshot } from "./approval.js";
import { canonicalJson } from "./canonical-json.js";
import type { HighRiskPattern } from "./human/policy.js";

/** What a rule or a risk pattern may name of a request; `null` where the request does not say. */
export interface RequestFacts {
  kind: string | null;
  title: string | null;
  /** The tool's command line: `rawInput.command` (a string, or an argv array joined by spaces). */
  command: string | null;
  cwd: string | null;
  host: string | null;
  agent: string | null;
}

export function requestFacts(snapshot: ApprovalSnapshot): RequestFacts {
  const { toolCall, session } = snapshot;
  return {
    kind: typeof toolCall.kind === "string" ? toolCall.kind : null,
    title: typeof toolCall.title === "string" ? toolCall.title : null,
    command: commandOf(toolCall.rawInput),
    cwd: cwdOf(toolCall.rawInput) ?? session.cwd,
    host: session.host,
    agent: session.agent?.name ?? null,
  };
}

function commandOf(rawInput: unknown): string | null {
  if (!rawInput || typeof rawInput !== "object") return null;
  const command = (rawInput as { command?: unknown }).command;
  if (typeof command === "string") return command;
  if (Array.isArray(command) && command.every((part) => typeof part === "string")) return command.join(" ");
  return null;
}

function cwdOf(rawInput: unknown): string | null {
  if (!rawInput || typeof rawInput !== "object") return null;
  const cwd = (rawInput as { cwd?: unknown }).cwd;
  return typeof cwd === "string" ? cwd : null;
}

type ToolCall = ApprovalSnapshot["toolCall"];

const records = (value: unknown): Record<string, unknown>[] =>
  Array.isArray(value) ? value.map((v) => (v && typeof v === "object" ? (v as Record<string, unknown>) : {})) : [];

/**
 * Every argument of a request, as a standing rule binds them: its `rawInput` whole, the paths
 * (and lines) of its `locations`, and the paths and new text of its diffs. Titles are left out:
 * hooks cut them to one argument, so they never stand for the arguments.
 */
export function requestInput(toolCall: ToolCall) {
  return {
    rawInput: toolCall.rawInput ?? null,
    locations: records(toolCall.locations).map((l) => ({ path: l.path ?? null, line: l.line ?? null })),
    diffs: records(toolCall.content)
      .filter((c) => c.type === "diff")
      .map((d) => ({ path: d.path ?? null, newText: d.newText ?? null })),
  };
}

/** The SHA-256 (hex) of `requestInput` as canonical JSON: equal only for requests with the same arguments. */
export function inputFingerprint(toolCall: ToolCall): string {
  return bytesToHex(sha256(utf8ToBytes(canonicalJson(requestInput(toolCall)))));
}

/** What a shell command's input may hold besides the command and still be covered by it: where and how long it runs, and the agent's words about it. */
const COMMAND_INPUT_KEYS = new Set(["command", "cwd", "description", "timeout"]);

/**
 * Whether a request's command (with its cwd) is all of its arguments: `rawInput.command` is a
 * string (an argv joined by spaces reads `["a b"]` and `["a", "b"]` alike), `rawInput` holds
 * nothing else that changes what runs (Gemini's `dir_path` does), and nothing names a location
 * or a diff. Where it is not, a rule from its card binds the whole input too.
 */
export function commandCoversInput(toolCall: ToolCall): boolean {
  const raw = toolCall.rawInput;
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return false;
  if (typeof (raw as { command?: unknown }).command !== "string") return false;
  const { locations, diffs } = requestInput(toolCall);
  return Object.keys(raw).every((key) => COMMAND_INPUT_KEYS.has(key)) && locations.length === 0 && diffs.length === 0;
}

/** Runs of whitespace count as one space, and leading and trailing space is ignored. */
export function normalizeSpace(text: string): string {
  return text.trim().replace(/\s+/g, " ");
}

/**
 * Glob match over the whole text: `*` is any run of characters (`/` included), `?` one
 * character, `\` makes the next character literal. Whitespace is normalized on both sides.
 * Linear in practice and never a regex, so a pattern cannot make matching blow up.
 */
export function globMatch(pattern: string, text: string, options: { ignoreCase?: boolean } = {}): boolean {
  const fold = (s: string) => (options.ignoreCase ? s.toLowerCase() : s);
  const p = tokens(fold(normalizeSpace(pattern)));
  const t = fold(normalizeSpace(text));
  let pi = 0;
  let ti = 0;
  let starAt = -1;
  let starText = 0;
  while (ti < t.length) {
    const token = p[pi];
    if (token !== undefined && (token === "?" || (token.length === 2 && token[1] === t[ti]))) {
      pi++;
      ti++;
    } else if (token === "*") {
      starAt = pi++;
      starText = ti;
    } else if (starAt >= 0) {
      pi = starAt + 1;
      ti = ++starText;
    } else {
      return false;
    }
  }
  while (p[pi] === "*") pi++;
  return pi === p.length;
}

/** A pattern as tokens: `*`, `?`, or a literal as `=c` (so an escaped `*` is not a star). */
function tokens(pattern: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === "\\" && i + 1 < pattern.length) out.push(`=${pattern[++i]}`);
    else if (c === "*" || c === "?") out.push(c);
    else out.push(`=${c}`);
  }
  return out;
}

/** A glob that matches exactly this text: a rule derived from a request keeps its arguments literal. */
export function globLiteral(text: string): string {
  return normalizeSpace(text).replace(/[\\*?]/g, (c) => `\\${c}`);
}

/** Whether `path` is `prefix` or inside it (a path prefix, not a string prefix: `/a` does not cover `/ab`). */
export function pathWithin(path: string, prefix: string): boolean {
  const base = prefix.length > 1 ? prefix.replace(/\/+$/, "") : prefix;
  return path === base || path.startsWith(base.endsWith("/") ? base : `${base}/`);
}

/** The parts of a command chain, each tried on its own: `cd x && rm -rf y` holds `rm -rf y`. */
export function commandParts(command: string): string[] {
  const parts = command
    .split(/&&|\|\||[;|\n]/)
    .map(normalizeSpace)
    .filter(Boolean);
  return [normalizeSpace(command), ...parts];
}

/** Whether a request is high-risk under these patterns (ignoring case; a fact the request lacks never matches). */
export function isHighRisk(patterns: readonly HighRiskPattern[], facts: RequestFacts): boolean {
  return patterns.some((pattern) => riskPatternMatches(pattern, facts));
}

function riskPatternMatches(pattern: HighRiskPattern, facts: RequestFacts): boolean {
  const glob = (p: string, text: string | null) => text !== null && globMatch(p, text, { ignoreCase: true });
  if (pattern.kind !== undefined && !glob(pattern.kind, facts.kind)) return false;
  if (pattern.title !== undefined && !glob(pattern.title, facts.title)) return false;
  if (pattern.command === undefined) return true;
  const command = pattern.command;
  return facts.command !== null && commandParts(facts.command).some((part) => glob(command, part));
}
