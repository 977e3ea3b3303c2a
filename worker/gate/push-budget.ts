/**
 * Push fatigue: at most PUSHES_PER_WINDOW pushes per session per window; past that, one summary
 * per window and then silence, so a looping agent cannot bury a phone in notifications.
 *
 * Owns: the budget rule (`pushDecision`, pure) and its bookkeeping in the gate's `push_log`.
 * Does not own: sending (the team's hub does, told through hub.ts).
 */
import type { GateStore } from "./store";

export const PUSHES_PER_WINDOW = 10;
export const PUSH_WINDOW_MS = 10 * 60 * 1000;

/** "approval": push this request · "summary": fatigue limit reached, one summary · "none". */
export type PushKind = { kind: "approval" } | { kind: "summary"; waiting: number } | { kind: "none" };

/** What to push for a new request, given pushes already sent in the window and the last summary. */
export function pushDecision(b: { sent: number; summaryAt: number; now: number }): "approval" | "summary" | "none" {
  if (b.sent < PUSHES_PER_WINDOW) return "approval";
  return b.summaryAt > b.now - PUSH_WINDOW_MS ? "none" : "summary";
}

/** Spends from the session's budget for a request opened at `now`. */
export function spendPushBudget(store: GateStore, now: number): PushKind {
  const sent = store.pushesSince(now - PUSH_WINDOW_MS);
  const decision = pushDecision({ sent, summaryAt: sent < PUSHES_PER_WINDOW ? 0 : store.summaryAt(), now });
  if (decision === "approval") {
    store.logPush(now);
    return { kind: "approval" };
  }
  if (decision === "none") return { kind: "none" };
  store.setSummaryAt(now);
  return { kind: "summary", waiting: store.pendingCount() };
}
