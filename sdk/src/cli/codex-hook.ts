/**
 * `tapgate codex-hook [--timeout SECONDS]`: an OpenAI Codex `PermissionRequest` hook command
 * (`Bash`, `NetworkAccess`). Every failure is a `deny` on exit 0, never a silent fall-through to
 * Codex's own approval. The machinery is `hooks/command.ts`; the mapping is `codex/hook.ts`.
 */
import { randomUUID } from "node:crypto";
import { type CodexInput, codexInputSchema, codexOutput, toCodexRequest } from "../codex/hook.js";
import { type HookAgent, runHookCommand } from "../hooks/command.js";

export const codexHook: HookAgent<CodexInput> = {
  command: "codex-hook",
  summary: "OpenAI Codex PermissionRequest hook",
  session: { title: "Codex", agent: "codex" },
  // Below Codex's 600 s default hook timeout, so Codex always gets our answer, not a killed hook.
  defaultTimeoutS: 540,
  agentTimeout: { defaultS: 600, setting: `the hook's "timeout" in hooks.json` },
  schema: codexInputSchema,
  sessionIdOf: (input) => input.session_id,
  cwdOf: (input) => input.cwd,
  toolCallIdOf: () => `codex-${randomUUID()}`,
  toRequest: toCodexRequest,
  // Codex has one event here, so even unreadable input gets a deny in its shape.
  output: (_input, decision) => codexOutput(decision),
};

export const main = (args: string[]): Promise<number> => runHookCommand(codexHook, args);
