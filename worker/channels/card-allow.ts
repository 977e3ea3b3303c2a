/**
 * Whether a channel's card may offer **Allow once**: only where the card shows what the allow
 * lets happen. A chat card carries the lock-screen line only, so no Allow for a high-risk request
 * (the passkey), under a `generic` lock screen (the card shows nothing of the request), for a
 * request whose title the agent's SDK cut or elided ("Bash: curl …"), that carries a diff (the
 * card never shows it) or that was truncated. Deny is always offered. The same rule as the
 * dashboard's batch allow (`BatchDecide.tsx`): an allow only of what was shown.
 *
 * Owns: the rule and its sentences. Does not own: the buttons (each platform's card) or deciding
 * (`team/channel-decision.ts`, which applies the same rule to a tap).
 */
import type { Approval } from "../../sdk/src/approval";
import type { TeamPolicy } from "../../sdk/src/human/policy";

export const HIGH_RISK_LINE = "High risk: needs your passkey: open in Tapgate.";
export const NOT_SHOWN_LINE = "To allow, open in Tapgate: this card does not show the whole request.";
export const DIFF_LINE = "To allow, open in Tapgate: the change is not shown here.";

/** Why the card offers no Allow (its line on the card), or null when it may. */
export function channelAllowRefusal(approval: Approval, lockScreen: TeamPolicy["lockScreen"]): string | null {
  // A private request is read only on the team's devices: a chat card never shows it.
  if (approval.sealed) return NOT_SHOWN_LINE;
  if (approval.risk === "high") return HIGH_RISK_LINE;
  const { toolCall, truncated } = approval.snapshot;
  if (approval.type === "elicitation" || lockScreen === "generic" || truncated) return NOT_SHOWN_LINE;
  const content = Array.isArray(toolCall.content) ? toolCall.content : [];
  if (content.some((c) => (c as { type?: unknown } | null)?.type === "diff")) return DIFF_LINE;
  const title = typeof toolCall.title === "string" ? toolCall.title.trim() : "";
  if (title === "" || title.endsWith("…") || title.length > LOCK_SCREEN_TITLE_CHARS) return NOT_SHOWN_LINE;
  return null;
}

/** The most characters of a title a lock screen (and so a channel card) shows whole. */
export const LOCK_SCREEN_TITLE_CHARS = 80;
