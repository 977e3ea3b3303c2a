/**
 * Which subagent asked, in the words a card and history show: a subagent's session names its
 * parent (ACP `subagent_update`, through `tapgate acp` and `tapgate run`), and a Claude Code
 * request names its subagent in `toolCall._meta.claudeCode` (`agentType`/`agentId` from the hook,
 * `parentToolUseId` from claude-code-acp). The agent's own words: shown as text, never trusted
 * for anything else. Pure, environment-neutral.
 */
import type { ApprovalSnapshot } from "./approval.js";
import type { SessionParent } from "./protocol.js";

/** "subagent tests of fix flaky test", "subagent Explore", or null for a request of the main agent. */
export function subagentOf(snapshot: Pick<ApprovalSnapshot, "session" | "toolCall">): string | null {
  const parent = snapshot.session.parent;
  if (parent) return parentWords(parent, snapshot.session.title);
  const claude = record(record(snapshot.toolCall._meta).claudeCode);
  const name = text(claude.agentType) ?? text(claude.agentId);
  if (name) return `subagent ${name}`;
  const parentToolUseId = text(claude.parentToolUseId);
  return parentToolUseId ? `subagent of tool call ${parentToolUseId}` : null;
}

/** A subagent session named by its parent: "subagent tests of fix flaky test". */
export function parentWords(parent: SessionParent, childTitle: string | null): string {
  return `subagent ${parent.name ?? childTitle ?? "?"} of ${parent.title ?? parent.sessionId}`;
}

function record(value: unknown): Record<string, unknown> {
  return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value ? value.slice(0, 128) : undefined;
}
