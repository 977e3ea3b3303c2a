/**
 * `tapgate claude-hook [--timeout SECONDS]`: a Claude Code `PreToolUse` / `PermissionRequest` hook
 * command. Reads the hook input on stdin, asks a human on Tapgate, and prints the hook's JSON
 * decision on stdout (and nothing else there). Every failure is a deny with a reason, exit 0, so
 * Claude reads it; only when the event itself is unknown does it exit 2, which Claude also treats
 * as a block.
 */

import { randomUUID } from "node:crypto";
import { isElicitationHookInput } from "../claude/elicitation.js";
import {
  HOOK_EVENTS,
  type HookDecision,
  type HookEvent,
  type HookInput,
  hookInputSchema,
  hookOutput,
  OPTIONS,
  sanitizeSessionId,
  toPermissionRequest,
} from "../claude/hook.js";
import { type LogLevel, Tapgate } from "../client.js";
import { progressLine } from "../progress-line.js";
import { type Progress, parseJson, type TapgateAnswerMeta, tapgateAnswerMeta } from "../protocol.js";
import { baseUrl } from "./account.js";
import { answerElicitation } from "./claude-elicitation.js";
import { credentials } from "./config.js";
import { oldTextReader } from "./old-text.js";

/** Below Claude Code's 600 s default hook timeout, so Claude always gets our answer, not a killed hook. */
const DEFAULT_TIMEOUT_S = 540;
const MAX_TIMEOUT_S = 24 * 60 * 60;
const CONNECT_TIMEOUT_MS = 10_000;

const USAGE = `usage: tapgate claude-hook [--timeout SECONDS]

Claude Code PreToolUse / PermissionRequest hook: reads the hook JSON on stdin, asks on Tapgate,
prints the decision JSON on stdout. Elicitation (an MCP server asking the user): the human's
answer (accept with content, decline, cancel) as the hook's JSON; every failure is cancel. Default timeout ${DEFAULT_TIMEOUT_S} s (env TAPGATE_HOOK_TIMEOUT).
`;

const deny = (reason: string): HookDecision => ({ allow: false, reason });

export async function main(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(USAGE);
    return 0;
  }
  const stdin = process.stdin.isTTY ? "" : await readStdin();
  const input = parseJson(stdin);
  if (isElicitationHookInput(input)) {
    // An MCP server asking the user (Claude Code's `Elicitation` event): answered with an action, never a deny.
    process.stdout.write(`${JSON.stringify(await answerElicitation(input, elicitationAsk(args)))}\n`);
    return 0;
  }
  const event = eventOf(input);
  const decision = await decide(input, args);
  if (!event) {
    process.stderr.write(`${decision.reason}\n`);
    return 2;
  }
  log("info", `${decision.allow ? "allow" : "deny"}: ${decision.reason}`);
  process.stdout.write(`${JSON.stringify(hookOutput(event, decision))}\n`);
  return 0;
}

async function decide(input: unknown, args: string[]): Promise<HookDecision> {
  const timeout = parseTimeout(args, process.env.TAPGATE_HOOK_TIMEOUT);
  if (typeof timeout === "string") return deny(`Tapgate: ${timeout}`);
  if (timeout > CLAUDE_DEFAULT_TIMEOUT_S - 10) {
    // Killed by Claude Code, the hook would decide nothing and Claude's own permission mode would.
    process.stderr.write(
      `tapgate claude-hook: waiting ${timeout} s; Claude Code kills hooks after ${CLAUDE_DEFAULT_TIMEOUT_S} s unless ` +
        `the hook's "timeout" in settings.json is set higher — set it above ${timeout}\n`,
    );
  }
  if (input === undefined) return deny("Tapgate: the hook input on stdin is not JSON");
  const parsed = hookInputSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? `${issue.path.join(".")}: ` : "";
    return deny(`Tapgate: invalid hook input on stdin (${where}${issue?.message})`);
  }
  const { url, apiKey } = credentials();
  if (!apiKey) return deny("Tapgate: not signed in — run `tapgate login`");
  let base: string;
  try {
    base = baseUrl(url);
  } catch (err) {
    return deny(`Tapgate: ${(err as Error).message}`);
  }
  return ask(parsed.data, base, apiKey, timeout * 1000);
}

/** What asking an elicitation needs, or why it cannot be asked. */
function elicitationAsk(args: string[]) {
  const timeout = parseTimeout(args, process.env.TAPGATE_HOOK_TIMEOUT);
  if (typeof timeout === "string") return timeout;
  const { url, apiKey } = credentials();
  if (!apiKey) return "not signed in — run `tapgate login`";
  try {
    const timeoutMs = timeout * 1000;
    return { url: baseUrl(url), apiKey, timeoutMs, connectTimeoutMs: Math.min(CONNECT_TIMEOUT_MS, timeoutMs), log };
  } catch (err) {
    return (err as Error).message;
  }
}

async function ask(input: HookInput, url: string, apiKey: string, timeoutMs: number): Promise<HookDecision> {
  // The SDK answers local failures fail-closed and says why only in its log: keep that as the reason.
  const problems: string[] = [];
  const onLog = (level: LogLevel, message: string) => {
    if (level === "warn" || level === "error") problems.push(message);
    log(level, message);
  };
  let gate: Tapgate | undefined;
  try {
    gate = new Tapgate({ url, apiKey, onLog, connectTimeoutMs: Math.min(CONNECT_TIMEOUT_MS, timeoutMs) });
    const sessionId = sanitizeSessionId(input.session_id);
    const session = await gate.session(sessionId, {
      title: "Claude Code",
      agent: { name: "claude-code" },
      ...(input.cwd ? { cwd: input.cwd } : {}),
    });
    const toolCallId = input.tool_use_id ?? `claude-${randomUUID()}`;
    const params = toPermissionRequest(input, sessionId, toolCallId, oldTextReader(input.cwd));
    const asked = Date.now();
    const onProgress = (progress: Progress) => process.stderr.write(`[tapgate] ${progressLine(progress)}\n`);
    const answer = await session.requestPermission(params, { timeoutMs, onProgress });
    const outcome = answer.outcome;
    const meta = tapgateAnswerMeta(answer);
    if (outcome.outcome === "selected" && outcome.optionId === OPTIONS[0].optionId) {
      return { allow: true, reason: "allowed on Tapgate" };
    }
    // The service says why it ended; answers the SDK gave itself carry no `_meta`.
    if (meta) return deny(denyReason(meta, Date.now() - asked));
    if (outcome.outcome === "cancelled") return deny("Tapgate: the request was cancelled");
    if (problems.length) return deny(`Tapgate: ${problems.at(-1)}`);
    // Without `_meta` (an older service), expiry and a human's deny are the same answer; only the clock tells them apart.
    if (Date.now() - asked >= timeoutMs) return deny(`Tapgate: no decision within ${timeoutMs / 1000} s`);
    return deny("denied on Tapgate by a human reviewer");
  } catch (err) {
    return deny(`Tapgate: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    gate?.close();
  }
}

const by = (d: { name: string; device: string }) => `${d.name} (${d.device})`;

/** Why Tapgate said no, from the answer's `_meta.tapgate` (`waitedMs`: how long the hook waited). */
export function denyReason(meta: TapgateAnswerMeta, waitedMs: number): string {
  switch (meta.reason) {
    case "decided": {
      const who = meta.decidedBy
        ? `denied on Tapgate by ${by(meta.decidedBy)}`
        : "denied on Tapgate by a human reviewer";
      // The decider's own words, for Claude to act on (Claude Code shows a deny's reason to the model).
      return meta.message ? `${who}: ${meta.message}` : who;
    }
    case "expired":
      return `Tapgate: expired — no decision within ${Math.round(waitedMs / 1000)} s`;
    case "agent_disconnected":
      return "Tapgate: agent disconnected before anyone decided";
    case "agent_cancelled":
    case "session_cancelled":
      return "Tapgate: the request was cancelled";
    case "key_revoked":
      return "Tapgate: this API key was revoked — run `tapgate login`";
    case "service_restart":
      return "Tapgate: the service restarted before anyone decided; try again";
    case "invalid":
      return "Tapgate: the service could not show this request";
    default:
      return `Tapgate: denied (${meta.reason ?? "no reason given"})`;
  }
}

/** Seconds from `--timeout N` / `--timeout=N`, else the env, else the default; a string is the problem. */
/** Claude Code's default hook timeout. */
const CLAUDE_DEFAULT_TIMEOUT_S = 600;

export function parseTimeout(args: string[], env: string | undefined): number | string {
  let value = env || undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    if (arg === "--timeout") value = args[++i];
    else if (arg.startsWith("--timeout=")) value = arg.slice("--timeout=".length);
    else return `unknown argument ${JSON.stringify(arg)} (usage: tapgate claude-hook [--timeout SECONDS])`;
  }
  if (value === undefined) return DEFAULT_TIMEOUT_S;
  const seconds = Number(value);
  if (Number.isInteger(seconds) && seconds >= 1 && seconds <= MAX_TIMEOUT_S) return seconds;
  return `invalid timeout ${JSON.stringify(value)}: use whole seconds from 1 to ${MAX_TIMEOUT_S}`;
}

function eventOf(input: unknown): HookEvent | undefined {
  const name = input && typeof input === "object" ? (input as Record<string, unknown>).hook_event_name : undefined;
  return HOOK_EVENTS.find((e) => e === name);
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function log(level: LogLevel, message: string): void {
  if (level !== "debug" || process.env.TAPGATE_DEBUG) process.stderr.write(`[tapgate] ${message}\n`);
}
