/**
 * The `Elicitation` event of `tapgate claude-hook`: an MCP server's question to the user, asked
 * on Tapgate instead of in the terminal. Every failure (invalid input, not signed in, unreachable,
 * a question Tapgate does not render, no answer in time) answers `cancel`, with the reason on
 * stderr; only a human accepts, declines, or types content.
 */
import { elicitationHookInputSchema, elicitationHookOutput, toElicitationParams } from "../claude/elicitation.js";
import { sanitizeSessionId } from "../claude/hook.js";
import { type LogLevel, Tapgate } from "../client.js";
import { createElicitationParamsSchema, ELICITATION_CANCELLED } from "../elicitation-protocol.js";
import { describeIssues } from "../params.js";

export interface ElicitationAsk {
  url: string;
  apiKey: string;
  /** The team's rule key (private mode's fingerprints), when this machine has one. */
  ruleKey?: string;
  timeoutMs: number;
  connectTimeoutMs: number;
  log: (level: LogLevel, message: string) => void;
}

const cancelled = (log: ElicitationAsk["log"], why: string) => {
  log("warn", `elicitation cancelled: ${why}`);
  return elicitationHookOutput(ELICITATION_CANCELLED);
};

export async function answerElicitation(input: unknown, ask: ElicitationAsk | string) {
  const log = typeof ask === "string" ? (_: LogLevel, m: string) => process.stderr.write(`[tapgate] ${m}\n`) : ask.log;
  if (typeof ask === "string") return cancelled(log, ask);
  const parsed = elicitationHookInputSchema.safeParse(input);
  if (!parsed.success) return cancelled(log, `invalid hook input on stdin (${describeIssues(parsed.error)})`);
  const sessionId = sanitizeSessionId(parsed.data.session_id);
  const params = toElicitationParams(parsed.data, sessionId);
  const valid = createElicitationParamsSchema.safeParse(params);
  if (!valid.success) return cancelled(log, `Tapgate cannot show this question (${describeIssues(valid.error)})`);
  let gate: Tapgate | undefined;
  try {
    const { url, apiKey, ruleKey, connectTimeoutMs } = ask;
    gate = new Tapgate({ url, apiKey, ruleKey, onLog: ask.log, connectTimeoutMs });
    const session = await gate.session(sessionId, {
      title: "Claude Code",
      agent: { name: "claude-code" },
      ...(parsed.data.cwd ? { cwd: parsed.data.cwd } : {}),
    });
    return elicitationHookOutput(await session.elicit(valid.data, { timeoutMs: ask.timeoutMs }));
  } catch (err) {
    return cancelled(log, err instanceof Error ? err.message : String(err));
  } finally {
    gate?.close();
  }
}
