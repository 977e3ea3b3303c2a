/** Times and outcomes in words, as the screens show them. */

import { subagentOf } from "../../sdk/src/subagent";
import type { ApprovalView } from "./api";

/** "4 s", "12 min", "3 h", "2 d": compact enough for a list row. */
export function shortDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h`;
  return `${Math.floor(s / 86_400)} d`;
}

/** "4:05" or "1:02:03", for countdowns. */
export function clock(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${sec}` : `${m}:${sec}`;
}

export function ago(at: number, now: number): string {
  return now - at < 5000 ? "just now" : `${shortDuration(now - at)} ago`;
}

export function dateTime(at: number): string {
  return new Date(at).toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
}

const STATE_WORDS: Record<ApprovalView["state"], string> = {
  pending: "Waiting",
  allowed: "Allowed",
  denied: "Denied",
  cancelled: "Cancelled",
  expired: "Expired",
};

const REASON_WORDS: Record<string, string> = {
  agent_cancelled: "the agent withdrew the request",
  session_cancelled: "the agent cancelled its session",
  agent_disconnected: "agent disconnected",
  expired: "nobody answered in time",
  key_revoked: "the agent's API key was revoked",
  session_stopped: "the session was stopped",
  service_restart: "the service restarted",
  invalid: "the request was invalid",
  rule: "a standing rule allowed it",
  dismissed: "dismissed",
};

/** An elicitation's answer, in words. */
export const ACTION_WORDS: Record<NonNullable<ApprovalView["action"]>, string> = {
  accept: "Answered",
  decline: "Declined",
  cancel: "Dismissed",
};

/** The headline of a resolved request: "Allowed by Sam on Pixel 8", "Denied — agent disconnected". */
export function outcome(a: ApprovalView, myUserId?: string): string {
  const word = STATE_WORDS[a.state];
  if (a.state === "pending") return word;
  if (a.reason === "decided" && a.decidedBy) {
    const option = a.options.find((o) => o.optionId === a.optionId);
    const chose = option
      ? ` (${optionWords(option.kind, option.optionId).label})`
      : a.action
        ? ` (${ACTION_WORDS[a.action]})`
        : "";
    const where = a.decidedBy.device && a.decidedBy.device !== "web" ? ` on ${a.decidedBy.device}` : "";
    const who = a.decidedBy.userId === myUserId ? "you" : a.decidedBy.name;
    return `${word}${chose} by ${who}${where}`;
  }
  if (a.reason === "dismissed" && a.decidedBy) {
    const who = a.decidedBy.userId === myUserId ? "you" : a.decidedBy.name;
    return `Dismissed by ${who} — the agent was told, and treats it as not allowed`;
  }
  if (a.reason === "session_stopped" && a.decidedBy) {
    return `${word} — ${a.decidedBy.userId === myUserId ? "you" : a.decidedBy.name} stopped the session`;
  }
  if (a.reason === "rule" && a.rule) {
    const who = a.rule.createdBy.userId === myUserId ? "your" : `${a.rule.createdBy.name}'s`;
    return `${word} by ${who} standing rule`;
  }
  if (a.state === "expired" || !a.reason) return word;
  return `${word} — ${REASON_WORDS[a.reason] ?? a.reason}`;
}

/** The outcome with when it happened: "Denied — agent disconnected 40 s ago". */
export function outcomeWithTime(a: ApprovalView, now: number, myUserId?: string): string {
  const text = outcome(a, myUserId);
  return a.resolvedAt ? `${text} ${ago(a.resolvedAt, now)}` : text;
}

export function isAllow(kind: string): boolean {
  return kind === "allow_once" || kind === "allow_always";
}

type OptionTone = "allow" | "reject" | "skip" | "unknown";

/**
 * What an option does, in Tapgate's words, from its ACP `kind`: the button's label and colour.
 * The agent's own `name` is only secondary text, so an agent cannot label an allow "Deny".
 */
const OPTION_WORDS: Record<string, { label: string; tone: OptionTone }> = {
  allow_once: { label: "Allow once", tone: "allow" },
  allow_always: { label: "Allow always", tone: "allow" },
  reject_once: { label: "Deny", tone: "reject" },
  reject_always: { label: "Deny always", tone: "reject" },
};

/**
 * `reject_once` options whose effect their id names (docs/agent-protocol.md "Skip and stop"):
 * codex-acp's `decline` under `continueOnReject` (the agent goes on without it) and the Codex
 * hook's `deny_stop` (the turn stops). Only ever rejects: an id never makes an allow.
 */
const NAMED_REJECTS = new Map<string, { label: string; tone: OptionTone }>([
  ["decline", { label: "Skip, continue without it", tone: "skip" }],
  ["deny_stop", { label: "Deny and stop the turn", tone: "reject" }],
]);

export function optionWords(kind: string, optionId?: string): { label: string; tone: OptionTone } {
  const named = kind === "reject_once" && optionId !== undefined ? NAMED_REJECTS.get(optionId) : undefined;
  return named ?? OPTION_WORDS[kind] ?? { label: `Unrecognised option (${kind})`, tone: "unknown" };
}

const withSubagent = (title: string, subagent: string | null) => (subagent ? `${title} · ${subagent}` : title);

/** The strings a card is headed by; each may be missing from what the agent sent. */
export function describeApproval(a: ApprovalView) {
  const tc = a.snapshot.toolCall;
  const session = a.snapshot.session;
  // An elicitation is headed by its question; lists show it too (never the answer).
  const question = a.type === "elicitation" ? a.snapshot.elicitation?.message : undefined;
  return {
    title: question || (typeof tc.title === "string" && tc.title ? tc.title : "Permission request"),
    kind: a.type === "elicitation" ? "question" : typeof tc.kind === "string" ? tc.kind : "other",
    sessionTitle: withSubagent(session.title ?? a.sessionId, subagentOf(a.snapshot)),
    agent: session.agent ? `${session.agent.name}${session.agent.version ? ` ${session.agent.version}` : ""}` : null,
  };
}
