/**
 * `tapgate gemini-hook [--timeout SECONDS]`: a Gemini CLI `BeforeTool` hook command. Every
 * failure is `{decision: "deny", reason}` on exit 0. Gemini kills hooks after 60 s unless the
 * hook's `timeout` (milliseconds) says otherwise, so the default wait is 50 s; set both higher
 * (README). The machinery is `hooks/command.ts`; the mapping is `gemini/hook.ts`.
 */
import { randomUUID } from "node:crypto";
import { type GeminiInput, geminiInputSchema, geminiOutput, toGeminiRequest } from "../gemini/hook.js";
import { type HookAgent, runHookCommand } from "../hooks/command.js";

export const geminiHook: HookAgent<GeminiInput> = {
  command: "gemini-hook",
  summary: "Gemini CLI BeforeTool hook",
  session: { title: "Gemini CLI", agent: "gemini-cli" },
  defaultTimeoutS: 50,
  agentTimeout: { defaultS: 60, setting: `the hook's "timeout" (milliseconds) in settings.json` },
  schema: geminiInputSchema,
  sessionIdOf: (input) => input.session_id,
  cwdOf: (input) => input.cwd,
  toolCallIdOf: () => `gemini-${randomUUID()}`,
  toRequest: toGeminiRequest,
  output: (_input, decision) => geminiOutput(decision),
};

export const main = (args: string[]): Promise<number> => runHookCommand(geminiHook, args);
