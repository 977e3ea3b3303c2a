/**
 * `tapgate claude-hook [--timeout SECONDS]`: a Claude Code `PreToolUse` / `PermissionRequest` hook
 * command. Reads the hook input on stdin, asks a human on Tapgate, and prints the hook's JSON
 * decision on stdout (and nothing else there). Every failure is a deny with a reason, exit 0, so
 * Claude reads it; only when the event itself is unknown does it exit 2, which Claude also treats
 * as a block. The machinery is `hooks/command.ts`; the mapping is `claude/hook.ts`.
 */
import { answerFor, type HookInput, hookInputSchema, toolCallIdOf, toPermissionRequest } from "../claude/hook.js";
import { type HookAgent, runHookCommand } from "../hooks/command.js";
import { oldTextReader } from "./old-text.js";

export const claudeHook: HookAgent<HookInput> = {
  command: "claude-hook",
  summary: "Claude Code PreToolUse / PermissionRequest hook",
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
};

export const main = (args: string[]): Promise<number> => runHookCommand(claudeHook, args);
