/**
 * What a request is, for matching, and the one glob every matcher uses: standing rules (the
 * gate, when a request arrives), high-risk patterns (the team policy, `risk-match.ts`) and a
 * rule's preview on the card all read a request through `requestFacts` and compare with
 * `globMatch`.
 *
 * Owns: the facts of a request and glob matching. Does not own: which rules or patterns exist,
 * or what a match does. Pure, light and environment-neutral: the Worker, the PWA and the SDK
 * import it (the shell parser stays out of it: `risk-match.ts` brings it).
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import type { ApprovalSnapshot } from "./approval.js";
import { canonicalJson } from "./canonical-json.js";

/** What a rule or a risk pattern may name of a request; `null` where the request does not say. */
export interface RequestFacts {
  kind: string | null;
  title: string | null;
  /** The tool's command line: `rawInput.command` (a string, or an argv array joined by spaces). */
  command: string | null;
  cwd: string | null;
  host: string | null;
  agent: string | null;
  /**
   * Paths the tool call may write, as given: its diff paths, and, unless its kind only reads
   * (`READ_ONLY_KINDS`), its locations and the path-named strings of its `rawInput`. What a
   * command writes is read from the command itself (`readShell`).
   */
  writes: string[];
  /** Every string in `rawInput`, at any depth (values, not keys). */
  inputs: string[];
}

export function requestFacts(snapshot: ApprovalSnapshot): RequestFacts {
  const { toolCall, session } = snapshot;
  const kind = typeof toolCall.kind === "string" ? toolCall.kind : null;
  return {
    kind,
    title: typeof toolCall.title === "string" ? toolCall.title : null,
    command: commandOf(toolCall.rawInput),
    cwd: cwdOf(toolCall.rawInput) ?? session.cwd,
    host: session.host,
    agent: session.agent?.name ?? null,
    writes: writesOf(toolCall, kind),
    inputs: stringsIn(toolCall.rawInput),
  };
}

/** Kinds of tool call that change no file: their locations are what they read. */
const READ_ONLY_KINDS = new Set(["read", "search", "fetch", "think", "switch_mode"]);

/** `rawInput` keys that name a path (`file_path`, `notebook_path`, `paths`, `destination`, …). */
const PATH_KEY = /path|file|dir|dest|target/i;

function writesOf(toolCall: ApprovalSnapshot["toolCall"], kind: string | null): string[] {
  const diffs = records(toolCall.content).flatMap((c) =>
    c.type === "diff" && typeof c.path === "string" ? [c.path] : [],
  );
  if (kind !== null && READ_ONLY_KINDS.has(kind)) return diffs;
  const locations = records(toolCall.locations).flatMap((l) => (typeof l.path === "string" ? [l.path] : []));
  const raw = toolCall.rawInput;
  const named =
    raw && typeof raw === "object" && !Array.isArray(raw)
      ? Object.entries(raw).flatMap(([key, value]) => (PATH_KEY.test(key) ? stringsIn(value) : []))
      : [];
  return [...diffs, ...locations, ...named];
}

/** The objects of a list the agent sent (the snapshot keeps its tool call as sent). */
function records(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value)
    ? value.filter((v): v is Record<string, unknown> => typeof v === "object" && v !== null)
    : [];
}

/** Every string in a JSON value, depth-first (nesting is bounded by the request's size limit). */
function stringsIn(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (value && typeof value === "object") return Object.values(value).flatMap(stringsIn);
  return [];
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
  return argumentsBesideCommand(toolCall)?.length === 0;
}

/**
 * The arguments of a command request beside its command (`rawInput` keys past `command`, `cwd`,
 * `description`, `timeout`), when a rule may leave them free and still hold the command to its
 * folder: the command is a string, and nothing else names a path (a `dir_path` would move it
 * elsewhere), a location or a diff. Null where a rule must bind them (`commandCoversInput` is
 * the case with none).
 */
export function argumentsBesideCommand(toolCall: ToolCall): string[] | null {
  const raw = toolCall.rawInput;
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return null;
  if (typeof (raw as { command?: unknown }).command !== "string") return null;
  const { locations, diffs } = requestInput(toolCall);
  if (locations.length > 0 || diffs.length > 0) return null;
  const others = Object.keys(raw).filter((key) => !COMMAND_INPUT_KEYS.has(key));
  return others.some((key) => PATH_KEY.test(key)) ? null : others;
}

/**
 * How text is compared: `ignoreCase`; `lineBreaks` keeps a run of whitespace holding a line
 * break apart from a space (for commands, where a line break ends a command and a space does not).
 */
export interface MatchOptions {
  ignoreCase?: boolean;
  lineBreaks?: boolean;
}

/** Runs of whitespace count as one space (one line break with `lineBreaks`); leading and trailing space is ignored. */
export function normalizeSpace(text: string, options: MatchOptions = {}): string {
  const trimmed = text.trim();
  if (!options.lineBreaks) return trimmed.replace(/\s+/g, " ");
  return trimmed.replace(/\s+/g, (run) => (/[\n\r]/.test(run) ? "\n" : " "));
}

/**
 * Glob match over the whole text: `*` is any run of characters (`/` and line breaks included),
 * `?` one character, `\` makes the next character literal. Whitespace is normalized on both
 * sides (`normalizeSpace`). Linear in practice and never a regex, so a pattern cannot make
 * matching blow up.
 */
export function globMatch(pattern: string, text: string, options: MatchOptions = {}): boolean {
  const fold = (s: string) => (options.ignoreCase ? s.toLowerCase() : s);
  const p = tokens(fold(normalizeSpace(pattern, options)));
  const t = fold(normalizeSpace(text, options));
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
export function globLiteral(text: string, options: Pick<MatchOptions, "lineBreaks"> = {}): string {
  return normalizeSpace(text, options).replace(/[\\*?]/g, (c) => `\\${c}`);
}

/** Whether `path` is `prefix` or inside it (a path prefix, not a string prefix: `/a` does not cover `/ab`). */
export function pathWithin(path: string, prefix: string): boolean {
  const base = prefix.length > 1 ? prefix.replace(/\/+$/, "") : prefix;
  return path === base || path.startsWith(base.endsWith("/") ? base : `${base}/`);
}
