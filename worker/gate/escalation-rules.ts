/**
 * The escalation ladder's rules, pure (unit-tested in `escalation-rules.test.ts`): which step is
 * due, when the ladder waits and when it is done, what counts as seen, and what the agent is told
 * (`_tapgate/progress`).
 *
 * Owns: the effective ladder of a request (the team's `escalation`, widened by `notify`), the
 * next move, the presence grace, the ack retry, and composing a progress report. Does not own:
 * storage or calling the hub (`escalation.ts`), or what a step does (the hub's `escalation.ts`).
 */
import type { EscalationStep, TeamPolicy } from "../../sdk/src/human/policy";
import { DEFAULT_ESCALATION } from "../../sdk/src/human/policy";
import type { Progress, RpcId } from "../../sdk/src/protocol";
import type { DeliveryReceipts } from "./api";
import type { ClimbStep } from "./hub";

/** A person whose visible app got the card instead of a push is pushed after this, unless they saw it. */
export const PRESENCE_GRACE_MS = 20_000;
/** A step the hub has not acknowledged is sent again after this (the hub runs each step once). */
export const ACK_RETRY_MS = 10_000;

/** One run of a step (or of its presence follow-up), as the gate recorded it. */
export interface FiredStep {
  step: number;
  phase: "step" | "presence";
  /** When it was (last) sent to the hub. */
  at: number;
  acked: boolean;
  /** What the hub answered: how many people or devices it reached, whose names, who was shown it live. */
  reached: number;
  to: string[];
  held: boolean;
}

export interface Ladder {
  steps: EscalationStep[];
  openedAt: number;
  fired: FiredStep[];
  /** When someone who may decide first saw it (a device showed or opened it, or a visible page showed it). */
  seenAt: number | null;
}

export type LadderMove =
  | { kind: "fire"; step: number; phase: "step" | "presence" }
  | { kind: "wait"; at: number }
  | { kind: "done" };

/**
 * The ladder a request runs: the team's `escalation` (defaults for a policy copy from before it
 * existed). With `notify: all_approvers` every push step meant for the session owner goes to
 * every approver instead, so that setting keeps its meaning (everyone is pushed at once).
 */
export function effectiveLadder(policy: TeamPolicy): EscalationStep[] {
  const steps = (policy as Partial<TeamPolicy>).escalation ?? DEFAULT_ESCALATION;
  if (policy.notify !== "all_approvers") return steps;
  return steps.map((s) => (s.via === "push" && s.to === "session_owner" ? { ...s, to: "all_approvers" } : s));
}

/** Whether anything fired so far reached anyone. */
function reachedAnyone(l: Ladder): boolean {
  return l.fired.some((f) => f.reached > 0);
}

/**
 * What the ladder does at `now`. Done once seen or when every step ran; a step the hub has not
 * acknowledged blocks the rest until it is acknowledged (and is sent again after ACK_RETRY_MS).
 * While nothing fired so far reached anyone, the next step is due at once, not at its time.
 */
export function nextMove(l: Ladder, now: number): LadderMove {
  if (l.seenAt !== null) return { kind: "done" };
  const waits: number[] = [];
  const unacked = l.fired.find((f) => !f.acked);
  if (unacked) {
    const retryAt = unacked.at + ACK_RETRY_MS;
    return retryAt <= now ? { kind: "fire", step: unacked.step, phase: unacked.phase } : { kind: "wait", at: retryAt };
  }
  for (const f of l.fired) {
    if (f.phase !== "step" || !f.held) continue;
    if (l.fired.some((g) => g.step === f.step && g.phase === "presence")) continue;
    const at = f.at + PRESENCE_GRACE_MS;
    if (at <= now) return { kind: "fire", step: f.step, phase: "presence" };
    waits.push(at);
  }
  const next = l.fired.filter((f) => f.phase === "step").reduce((n, f) => Math.max(n, f.step + 1), 0);
  const step = l.steps[next];
  if (step) {
    const at = l.fired.length > 0 && !reachedAnyone(l) ? now : l.openedAt + step.afterMs;
    if (at <= now) return { kind: "fire", step: next, phase: "step" };
    waits.push(at);
  }
  return waits.length > 0 ? { kind: "wait", at: Math.min(...waits) } : { kind: "done" };
}

/**
 * The steps after `step` that would each be due at once if it and they reach nobody (nothing
 * fired so far reached anyone): sent with the step as its climb, so the hub runs them in the
 * same call. Empty once anything reached someone, and for a presence follow-up.
 */
export function climbAfter(l: Ladder, step: number, phase: FiredStep["phase"]): ClimbStep[] {
  if (phase !== "step" || reachedAnyone(l)) return [];
  return l.steps.slice(step + 1).map((s, i) => ({ step: step + 1 + i, to: s.to, via: s.via }));
}

type Receipts = DeliveryReceipts;

export const NO_RECEIPTS: DeliveryReceipts = { deliveredTo: [], seenBy: [] };

/** Who may decide is who may stop the ladder: under `deciders: session_owner` only the owner's seeing counts. */
export function seenAtOf(receipts: Receipts, policy: Pick<TeamPolicy, "deciders">, ownerUserId: string): number | null {
  const counted = receipts.seenBy.filter((s) => policy.deciders !== "session_owner" || s.userId === ownerUserId);
  return counted.length > 0 ? Math.min(...counted.map((s) => s.at)) : null;
}

/** The agent's view of where its request stands. */
export function progressOf(requestId: RpcId, approvalId: string, l: Ladder, receipts: Receipts): Progress {
  const progress: Progress = {
    requestId,
    approvalId,
    deliveredTo: receipts.deliveredTo.map(({ userId: _, ...d }) => d),
    seenBy: receipts.seenBy.map(({ name, at }) => ({ name, at })),
  };
  const escalated = l.fired.filter((f) => f.step > 0 && f.phase === "step" && f.acked && f.reached > 0).at(-1);
  const step = escalated && l.steps[escalated.step];
  if (receipts.claimedBy) progress.claimedBy = receipts.claimedBy;
  if (escalated && step) progress.escalatedTo = { names: escalated.to, via: step.via, at: escalated.at };
  // No device and no open page got it (mail is no device): said at once, not at expiry.
  const pushed = l.fired.some((f) => f.reached > 0 && l.steps[f.step]?.via === "push");
  const nothing = receipts.deliveredTo.length === 0 && receipts.seenBy.length === 0 && !pushed;
  // Said once a step has answered, and kept while the next one is on its way (no flicker).
  if (nothing && l.fired.some((f) => f.acked)) progress.unreachable = true;
  return progress;
}
