/**
 * The escalation ladder of a session's requests: each pending request climbs its team's
 * `escalation` steps (push the owner, push again, push every approver, mail the owner) until
 * someone who may decide has seen it or it ends. Driven by the gate's alarm (the shell asks
 * `dueAt` and runs `tick`), never by polling; each step runs once (it is marked fired before the
 * hub is asked, and the hub runs each step once, so a retry after a lost answer repeats
 * nothing); every step goes to the audit chain, and the hub keeps it on the card's timeline.
 * The hub tells the gate where a request stands (`received`), which stops the ladder once seen
 * and is sent to the agent as `_tapgate/progress`.
 *
 * Owns: starting a request's ladder, firing due steps, acknowledging them, the receipts and the
 * progress sent to the agent. Does not own: the rules (`escalation-rules.ts`), the SQL
 * (`ladder-store.ts`), what a step does (the hub's `escalation.ts`), or the alarm (the shell).
 */
import type { Approval } from "../../sdk/src/approval";
import type { Progress, RpcId } from "../../sdk/src/protocol";
import type { DeliveryReceipts } from "./api";
import {
  climbAfter,
  effectiveLadder,
  type FiredStep,
  type Ladder,
  NO_RECEIPTS,
  nextMove,
  progressOf,
  seenAtOf,
} from "./escalation-rules";
import type { EscalationOrder, EscalationOutcome } from "./hub";
import type { LadderRow, LadderStore } from "./ladder-store";
import type { Outbox } from "./outbox";
import type { GateStore, PendingRow, ServedSession } from "./store";

export interface EscalationHost {
  store: GateStore;
  ladders: LadderStore;
  outbox: Outbox;
  /** Asks the team's hub to run a step, and waits for its outcome. */
  escalate(teamId: string, order: EscalationOrder): Promise<EscalationOutcome>;
  /** Sends the agent holding `row` a notification on its socket (HTTP holders read it in their poll). */
  notify(row: PendingRow, progress: Progress): void;
}

/** A bound on firing rounds per tick: every step and its presence follow-up, and their retries. */
const MAX_ROUNDS = 32;

export class Escalation {
  constructor(private readonly host: EscalationHost) {}

  /** A request was opened: its ladder starts, with the steps of the policy it was opened under. */
  start(approval: Approval, meta: ServedSession, now: number): void {
    const ladder: Ladder = { steps: effectiveLadder(meta.policy), openedAt: now, fired: [], seenAt: null };
    this.host.ladders.insert(approval.id, ladder, NO_RECEIPTS, nextAt(ladder, now));
  }

  /** When the alarm must come back for a ladder; null when none waits. */
  dueAt(): number | null {
    return this.host.ladders.nextDue();
  }

  /**
   * Fires every step due at `now` and waits for the hub's outcomes; a step that reached nobody
   * makes the next one due at once, so the loop runs again (bounded).
   */
  async tick(now: number): Promise<void> {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const calls = this.host.ladders.dueBy(now).flatMap((row) => this.fire(row, now));
      if (calls.length === 0) return;
      await Promise.all(calls);
    }
  }

  /** The hub's receipts for a pending request changed; a report that changes nothing writes nothing. */
  received(teamId: string, approvalId: string, receipts: DeliveryReceipts, now: number): void {
    const meta = this.host.store.meta();
    const row = this.host.ladders.get(approvalId);
    const pending = this.host.store.pendingById(approvalId);
    if (!meta || meta.teamId !== teamId || !row || !pending) return;
    const seenAt = row.ladder.seenAt ?? seenAtOf(receipts, meta.policy, meta.ownerUserId);
    if (seenAt === row.ladder.seenAt && JSON.stringify(receipts) === JSON.stringify(row.receipts)) return;
    row.receipts = receipts;
    row.ladder.seenAt = seenAt;
    this.saveAndTell(row, pending, now);
  }

  /** When this person first saw a pending request, by the receipts the hub last reported; null if not. */
  seenAt(approvalId: string, userId: string): number | null {
    return this.host.ladders.get(approvalId)?.receipts.seenBy.find((s) => s.userId === userId)?.at ?? null;
  }

  /** The progress of an HTTP-held request, for its poll's `202`. */
  progress(approvalId: string): Progress | null {
    const row = this.host.ladders.get(approvalId);
    return row ? progressOf(approvalId, approvalId, row.ladder, row.receipts) : null;
  }

  /** Pruned requests take their ladders with them. */
  pruneResolved(): void {
    this.host.ladders.pruneOrphans();
  }

  /** Marks the due step fired (synchronously, so no other event fires it too), then asks the hub. */
  private fire(row: LadderRow, now: number): Array<Promise<void>> {
    const meta = this.host.store.meta();
    const pending = this.host.store.pendingById(row.approvalId);
    if (!meta || !pending) return [];
    const move = nextMove(row.ladder, now);
    if (move.kind !== "fire") {
      this.host.ladders.save(row, nextAt(row.ladder, now));
      return [];
    }
    const step = row.ladder.steps[move.step];
    if (!step) return [];
    const fired = row.ladder.fired;
    const known = fired.find((f) => f.step === move.step && f.phase === move.phase);
    if (known) known.at = now;
    else fired.push({ step: move.step, phase: move.phase, at: now, acked: false, reached: 0, to: [], held: false });
    this.host.ladders.save(row, nextAt(row.ladder, now));
    const order: EscalationOrder = {
      approval: JSON.parse(pending.record) as Approval,
      ownerUserId: meta.ownerUserId,
      step: move.step,
      phase: move.phase,
      to: step.to,
      via: step.via,
      lockScreen: meta.policy.lockScreen,
      deciders: meta.policy.deciders,
      climb: climbAfter(row.ladder, move.step, move.phase),
    };
    const asked = this.host
      .escalate(meta.teamId, order)
      .then((outcome) => this.acked(row.approvalId, move.step, move.phase, outcome, now))
      // Unanswered: the step stays unacknowledged and is sent again after ACK_RETRY_MS.
      .catch(() => undefined);
    return [asked];
  }

  /**
   * The hub ran a step (and the steps it climbed to after it): each recorded once, audited once,
   * and the agent told once, of where they all ended.
   */
  private acked(approvalId: string, step: number, phase: FiredStep["phase"], outcome: EscalationOutcome, now: number) {
    const meta = this.host.store.meta();
    const row = this.host.ladders.get(approvalId);
    const f = row?.ladder.fired.find((x) => x.step === step && x.phase === phase);
    const pending = this.host.store.pendingById(approvalId);
    if (!meta || !row || !f || f.acked) return;
    Object.assign(f, { acked: true, reached: outcome.reached, to: outcome.to, held: outcome.held });
    this.audit(meta, row, f);
    for (const c of outcome.climbed ?? []) {
      if (row.ladder.fired.some((x) => x.step === c.step && x.phase === "step")) continue;
      const climbed: FiredStep = { step: c.step, phase: "step", at: f.at, acked: true, ...c.outcome };
      row.ladder.fired.push(climbed);
      this.audit(meta, row, climbed);
    }
    if (pending) this.saveAndTell(row, pending, now);
    else this.host.ladders.save(row, null);
  }

  /** A step's run, to the audit chain (through the outbox). */
  private audit(meta: ServedSession, row: LadderRow, f: FiredStep): void {
    const s = row.ladder.steps[f.step];
    this.host.outbox.enqueue({
      op: "audit",
      eventId: `${row.approvalId}:escalated:${f.step}:${f.phase}`,
      teamId: meta.teamId,
      at: f.at,
      actor: "system",
      action: "approval.escalated",
      subject: row.approvalId,
      detail: {
        sessionId: meta.sessionId,
        step: f.step,
        phase: f.phase,
        afterMs: s?.afterMs,
        to: s?.to,
        via: s?.via,
        reached: f.reached,
      },
    });
  }

  /** Saves the row and, when the agent's view changed, sends it. */
  private saveAndTell(row: LadderRow, pending: PendingRow, now: number): void {
    const progress = progressOf(requestIdOf(pending), row.approvalId, row.ladder, row.receipts);
    const text = JSON.stringify(progress);
    const changed = text !== row.progress;
    row.progress = text;
    this.host.ladders.save(row, nextAt(row.ladder, now));
    if (changed) this.host.notify(pending, progress);
  }
}

/** When the ladder must be looked at next (now when a step is due), or null when it is done. */
function nextAt(ladder: Ladder, now: number): number | null {
  const move = nextMove(ladder, now);
  if (move.kind === "done") return null;
  return move.kind === "wait" ? move.at : now;
}

/** The agent's id for its request: the JSON-RPC id on a socket, the approval id over HTTP. */
function requestIdOf(row: PendingRow): RpcId {
  return row.socket_id === "" ? row.id : (JSON.parse(row.rpc_id) as RpcId);
}
