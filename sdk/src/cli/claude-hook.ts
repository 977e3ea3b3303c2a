/**
 * `tapgate claude-hook [--timeout SECONDS]`: a Claude Code `PreToolUse` / `PermissionRequest` hook
 * command. Reads the hook input on stdin, asks a human on Tapgate, and prints the hook's JSON
 * decision on stdout (and nothing else there). Every failure is a deny with a reason, exit 0, so
 * Claude reads it; only when the event itself is unknown does it exit 2, which Claude also treats
 * as a block. The `Elicitation` event (an MCP server asking the user) is answered with the
 * human's action instead, every failure `cancel` (`claude-elicitation.ts`). The machinery is
 * `hooks/command.ts`; the mapping is `claude/hook.ts`.
 */
import { isElicitationHookInput } from "../claude/elicitation.js";
import { answerFor, type HookInput, hookInputSchema, toolCallIdOf, toPermissionRequest } from "../claude/hook.js";
import { CONNECT_TIMEOUT_MS, type HookAgent, hookLog, parseTimeout, runHookCommand } from "../hooks/command.js";
import { baseUrl } from "./account.js";
import { answerElicitation, type ElicitationAsk } from "./claude-elicitation.js";
import { credentials } from "./config.js";
import { oldTextReader } from "./old-text.js";

export const claudeHook: HookAgent<HookInput> = {
  command: "claude-hook",
  summary: "Claude Code PreToolUse / PermissionRequest / Elicitation hook",
  session: { title: "Claude Code", agent: "claude-code" },
  // Below Claude Code's 600 s default hook timeout, so Claude always gets our answer, not a killed hook.
  defaultTimeoutS: 540,
  agentTimeout: { defaultS: 600, setting: `the hook's "timeout" in settings.json` },
  schema: hookInputSchema,
  sessionIdOf: (input) => input.session_id,
  cwdOf: (input) => input.cwd,
  toolCallIdOf,
  toRequest: (input, sessionId, toolCallId) =>
    toPermissionRequest(input, sessionId, toolCallId, oldTextReader(input.cwd)),
  output: answerFor,
  answerOther: async (input, args) =>
    isElicitationHookInput(input) ? answerElicitation(input, elicitationAsk(args)) : undefined,
};

export const main = (args: string[]): Promise<number> => runHookCommand(claudeHook, args);

/** What asking an elicitation needs, or why it cannot be asked. */
function elicitationAsk(args: string[]): ElicitationAsk | string {
  const timeout = parseTimeout(args, process.env.TAPGATE_HOOK_TIMEOUT, claudeHook.defaultTimeoutS, claudeHook.command);
  if (typeof timeout === "string") return timeout;
  const { url, apiKey, ruleKey } = credentials();
  if (!apiKey) return "not signed in — run `tapgate login`";
  try {
    const timeoutMs = timeout * 1000;
    return {
      url: baseUrl(url),
      apiKey,
      ...(ruleKey && { ruleKey }),
      timeoutMs,
      connectTimeoutMs: Math.min(CONNECT_TIMEOUT_MS, timeoutMs),
      log: hookLog,
    };
  } catch (err) {
    return (err as Error).message;
  }
}
