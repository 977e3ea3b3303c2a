/**
 * The machinery every `tapgate *-hook` command shares (Claude Code, Codex, Gemini CLI): read the
 * agent's hook JSON on stdin, turn it into a permission request, ask a human through a gate
 * session, and print the agent's answer on stdout (and nothing else there). Every failure — bad
 * input, no key, unreachable server, expiry — is a deny the agent reads, never a silent exit.
 *
 * Owns: the timeout option, stdin, credentials, the one ask, the log. Does not own: an agent's
 * payload shape or answer shape (its `HookAgent`), or what a decision means (`decision.ts`).
 */
import type { z } from "zod";
import { baseUrl } from "../cli/account.js";
import { credentials } from "../cli/config.js";
import { type LogLevel, type SessionMeta, Tapgate } from "../client.js";
import { progressLine } from "../progress-line.js";
import { type Progress, parseJson, type RequestPermissionParams } from "../protocol.js";
import { type Asked, decisionOf, deny, type HookDecision, requestAcceptsEdits } from "./decision.js";
import { sanitizeSessionId } from "./request.js";

/** What makes a hook command one agent's: its payload, its card, its answer, its timeouts. */
export interface HookAgent<Input> {
  /** The subcommand, e.g. `codex-hook`. */
  command: string;
  /** One line for `--help`: which agent and event. */
  summary: string;
  /** The session's title and agent name on cards. */
  session: { title: string; agent: string };
  /** Seconds to wait for a human when neither `--timeout` nor `TAPGATE_HOOK_TIMEOUT` says. */
  defaultTimeoutS: number;
  /** The agent kills a hook after `defaultS` unless the user raised `setting`: warn when we would wait longer. */
  agentTimeout: { defaultS: number; setting: string };
  schema: z.ZodType<Input>;
  sessionIdOf(input: Input): string;
  cwdOf(input: Input): string | undefined;
  /** The agent's own id for the tool call, or a generated one. */
  toolCallIdOf(input: Input): string;
  toRequest(input: Input, sessionId: string, toolCallId: string): RequestPermissionParams;
  /**
   * The JSON the agent reads for `decision`. `input` is whatever stdin held (it may not have
   * parsed): `undefined` when no answer in the agent's shape is possible, and the command exits 2
   * with the reason on stderr (which the agent treats as a block).
   */
  output(input: unknown, decision: HookDecision): Record<string, unknown> | undefined;
  /**
   * Another kind of question on the same hook (Claude Code's `Elicitation`): its whole answer,
   * printed as is; `undefined` when the input is a permission question.
   */
  answerOther?(input: unknown, args: string[]): Promise<Record<string, unknown> | undefined>;
}

export const MAX_TIMEOUT_S = 24 * 60 * 60;
export const CONNECT_TIMEOUT_MS = 10_000;

export async function runHookCommand<Input>(agent: HookAgent<Input>, args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(usage(agent));
    return 0;
  }
  const stdin = process.stdin.isTTY ? "" : await readStdin();
  const input = parseJson(stdin);
  const other = await agent.answerOther?.(input, args);
  if (other) {
    process.stdout.write(`${JSON.stringify(other)}\n`);
    return 0;
  }
  const decision = await decide(agent, input, args);
  const answer = agent.output(input, decision);
  if (!answer) {
    process.stderr.write(`${decision.reason}\n`);
    return 2;
  }
  log("info", `${decision.allow ? "allow" : "deny"}: ${decision.reason}`);
  process.stdout.write(`${JSON.stringify(answer)}\n`);
  return 0;
}

function usage(agent: HookAgent<unknown>): string {
  return `usage: tapgate ${agent.command} [--timeout SECONDS]

${agent.summary}: reads the hook JSON on stdin, asks on Tapgate, prints the decision JSON on
stdout. Default timeout ${agent.defaultTimeoutS} s (env TAPGATE_HOOK_TIMEOUT).
`;
}

async function decide<Input>(agent: HookAgent<Input>, input: unknown, args: string[]): Promise<HookDecision> {
  const timeout = parseTimeout(args, process.env.TAPGATE_HOOK_TIMEOUT, agent.defaultTimeoutS, agent.command);
  if (typeof timeout === "string") return deny(`Tapgate: ${timeout}`);
  const { defaultS, setting } = agent.agentTimeout;
  if (timeout > defaultS - 10) {
    // Killed by the agent, the hook would decide nothing and the agent's own permission mode would.
    process.stderr.write(
      `tapgate ${agent.command}: waiting ${timeout} s; the agent kills hooks after ${defaultS} s unless ` +
        `${setting} is set higher — set it above ${timeout}\n`,
    );
  }
  if (input === undefined) return deny("Tapgate: the hook input on stdin is not JSON");
  const parsed = agent.schema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? `${issue.path.join(".")}: ` : "";
    return deny(`Tapgate: invalid hook input on stdin (${where}${issue?.message})`);
  }
  const { url, apiKey, ruleKey } = credentials();
  if (!apiKey) return deny("Tapgate: not signed in — run `tapgate login`");
  let base: string;
  try {
    base = baseUrl(url);
  } catch (err) {
    return deny(`Tapgate: ${(err as Error).message}`);
  }
  return ask(agent, parsed.data, { url: base, apiKey, ruleKey, timeoutMs: timeout * 1000 });
}

async function ask<Input>(agent: HookAgent<Input>, input: Input, to: AskTarget): Promise<HookDecision> {
  const sessionId = sanitizeSessionId(agent.sessionIdOf(input), agent.session.agent);
  const cwd = agent.cwdOf(input);
  const meta: SessionMeta = { title: agent.session.title, agent: { name: agent.session.agent }, ...(cwd && { cwd }) };
  const request = agent.toRequest(input, sessionId, agent.toolCallIdOf(input));
  return decisionOf(await askOnce(to, sessionId, meta, request), requestAcceptsEdits(request));
}

/** Where to ask, and for how long at most (the team's lifetime may be shorter). */
export interface AskTarget {
  url: string;
  apiKey: string;
  /** The team's rule key (private mode's fingerprints), when this machine has one. */
  ruleKey?: string;
  timeoutMs: number;
}

/** How an ask ends early: `cancel` withdraws the request (`agent_cancelled`), `disconnect` drops the connection (`agent_disconnected`). */
export interface AskEnds {
  cancel?: AbortSignal;
  disconnect?: AbortSignal;
}

/**
 * One permission request on its own connection, closed after the answer: the answer, or why
 * nothing was decided. Never throws.
 */
export async function askOnce(
  to: AskTarget,
  sessionId: string,
  meta: SessionMeta,
  request: RequestPermissionParams,
  ends: AskEnds = {},
): Promise<Asked> {
  // The SDK answers local failures fail-closed and says why only in its log: keep that as the reason.
  const problems: string[] = [];
  const onLog = (level: LogLevel, message: string) => {
    if (level === "warn" || level === "error") problems.push(message);
    log(level, message);
  };
  const { timeoutMs } = to;
  let gate: Tapgate | undefined;
  const disconnect = () => gate?.close();
  ends.disconnect?.addEventListener("abort", disconnect, { once: true });
  try {
    if (ends.disconnect?.aborted) return { failed: "Tapgate: the MCP client is gone" };
    gate = new Tapgate({ ...to, onLog, connectTimeoutMs: Math.min(CONNECT_TIMEOUT_MS, timeoutMs) });
    const session = await gate.session(sessionId, meta);
    const asked = Date.now();
    // Where the request stands, one line per change on stderr (stdout is the agent's).
    const onProgress = (progress: Progress) => log("info", progressLine(progress));
    const answer = await session.requestPermission(request, { timeoutMs, onProgress, signal: ends.cancel });
    const waitedMs = Date.now() - asked;
    return { answer, waitedMs, timeoutMs, problem: problems.at(-1) };
  } catch (err) {
    return { failed: `Tapgate: ${err instanceof Error ? err.message : String(err)}` };
  } finally {
    ends.disconnect?.removeEventListener("abort", disconnect);
    gate?.close();
  }
}

/** Seconds from `--timeout N` / `--timeout=N`, else the env, else the default; a string is the problem. */
export function parseTimeout(
  args: string[],
  env: string | undefined,
  defaultS: number,
  command: string,
): number | string {
  let value = env || undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    if (arg === "--timeout") value = args[++i];
    else if (arg.startsWith("--timeout=")) value = arg.slice("--timeout=".length);
    else return `unknown argument ${JSON.stringify(arg)} (usage: tapgate ${command} [--timeout SECONDS])`;
  }
  if (value === undefined) return defaultS;
  const seconds = Number(value);
  if (Number.isInteger(seconds) && seconds >= 1 && seconds <= MAX_TIMEOUT_S) return seconds;
  return `invalid timeout ${JSON.stringify(value)}: use whole seconds from 1 to ${MAX_TIMEOUT_S}`;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** The hook's log on stderr (debug only with `TAPGATE_DEBUG`): stdout is the agent's. */
export const hookLog = log;

function log(level: LogLevel, message: string): void {
  if (level !== "debug" || process.env.TAPGATE_DEBUG) process.stderr.write(`[tapgate] ${message}\n`);
}
