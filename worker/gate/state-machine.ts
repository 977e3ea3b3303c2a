/**
 * The approval state machine: open → pending → (decide | lapse | cancel | disconnect | revoke)
 * → resolved. `resolve` is the one way out of `pending`, and every exit writes the same things:
 * the record, the agent's answer (delivered on its socket or to its long polls), the D1 index
 * row and the audit event (outbox), and the news for the team's hub. Each transition's writes
 * are one storage transaction, and what leaves the object (the answer, the hub's news) leaves
 * only once it committed: a throw half-way writes nothing and tells nobody. A row whose
 * resolution throws among several is set aside (quarantined), so it blocks none of the others.
 *
 * Owns: the transitions. Does not own: the rules they follow (rules.ts), storage (store.ts),
 * transports (socket-agents.ts, http-agents.ts), a new request's checks and draft (intake.ts) or
 * when to flush and wake (the shell).
 */
import type { Approval } from "../../sdk/src/approval";
import { type AgentAnswer, type AgentAsk, isElicitation } from "../../sdk/src/elicitation-protocol";
import type { PermissionOption } from "../../sdk/src/protocol";
import type { StandingRule } from "../../sdk/src/rules";
import { randomBase62 } from "../crypto";
import type { DecisionInput, DecisionResult, GateRuleChoices } from "./api";
import { checkElicitationDecision, elicitationAnswer, isRepeatElicitation } from "./elicitation";
import type { GateNews } from "./hub";
import { checkAsk, draftApproval, type Refusal } from "./intake";
import type { Outbox } from "./outbox";
import { cardRuleMatch, highRiskPatterns, offeredRules, ruleResolution } from "./rule-allow";
import {
  agentAnswer,
  auditOp,
  checkDecision,
  isRepeatDecision,
  lapseOf,
  lateDecisionError,
  type Resolution,
  resolvedApproval,
} from "./rules";
import { type GateStore, type Holder, type PendingRow, SET_ASIDE, type ServedSession, type StoredRow } from "./store";

/** What the state machine needs from its Durable Object. */
export interface MachineHost {
  store: GateStore;
  outbox: Outbox;
  /** The object's id: approval ids carry it, so a decision is routed without a lookup. */
  objectId: string;
  /** News for the team's hub, in the background (the gate's `HubMail`). */
  tellHub(teamId: string, news: GateNews): void;
  /** Hands a resolved request's answer to whoever waits for it (its socket, its long polls), once per resolution. */
  deliver(row: PendingRow, answer: AgentAnswer): void;
  /**
   * Whether the agent can still receive the row's answer now: an HTTP-held row always (its
   * answer waits for the next poll); a socket-held one while its socket is open and was heard
   * from within two heartbeats.
   */
  reachable(row: PendingRow, now: number): boolean;
  /** Runs `work` as one storage transaction (nested: a savepoint); a throw rolls all of it back. */
  transaction<T>(work: () => T): T;
  /** Sets aside a row whose resolution threw, and reports it. */
  quarantine(row: PendingRow, error: unknown, now: number): void;
  /** A request is now pending (its escalation ladder starts). */
  opened?(approval: Approval, meta: ServedSession, now: number): void;
  /** When this person first saw the pending request, as the hub's receipts told (null: not known). */
  seenAt?(approvalId: string, userId: string): number | null;
}

export class StateMachine {
  /** What the transaction being run hands out once it commits (null outside one). */
  private effects: Array<() => void> | null = null;

  constructor(private readonly host: MachineHost) {}

  private get store() {
    return this.host.store;
  }

  /** A fresh approval id; it names this object, so a decision is routed without a lookup. */
  newApprovalId(): string {
    return `apr_${this.host.objectId}_${randomBase62(22)}`;
  }

  /** The session's own checks of a new request (before the team's quotas): its lifetime, or a refusal. */
  check(meta: ServedSession, params: AgentAsk): { lifetimeMs: number } | Refusal {
    return checkAsk(this.store, meta, params);
  }

  /** The approval a request is held as (`draftApproval`). */
  draft(meta: ServedSession, holder: Holder, params: AgentAsk, now: number, id: string, lifetimeMs: number): Approval {
    return draftApproval(this.store, { meta, holder, params, now, id, lifetimeMs });
  }

  /**
   * Holds a new permission request for its holder, or says why it is refused. The team's quotas
   * admitted `id` already (admission.ts); the session's checks run again here, synchronously
   * with the write, since other events may have come in while the hub was asked. A standing
   * rule of `rules` (the hub's, with the admission) that allows it ends it at once: no push.
   * `rulesAt` is when the rules are checked: the time after the admission's wait, not `now`
   * (when the request arrived), so a rule that expired meanwhile allows nothing.
   */
  open(
    meta: ServedSession,
    holder: Holder,
    params: AgentAsk,
    now: number,
    id = this.newApprovalId(),
    rules: readonly StandingRule[] = [],
    rulesAt = now,
  ): Approval | Refusal {
    const checked = this.check(meta, params);
    if ("refused" in checked) return checked;
    const approval = this.draft(meta, holder, params, now, id, checked.lifetimeMs);
    return this.atomically(() => {
      this.store.insertPending(approval, holder, isElicitation(params) ? [] : params.options);
      this.host.outbox.enqueue({ op: "approval", teamId: meta.teamId, ownerUserId: meta.ownerUserId, approval });
      this.host.outbox.enqueue(auditOp(meta, approval, `key:${holder.keyId}`, "approval.requested", now));
      const byRule = ruleResolution(meta, approval, rules, rulesAt);
      if (byRule) return this.resolve(this.store.pendingById(approval.id) as PendingRow, byRule, now) ?? approval;
      this.afterCommit(() =>
        this.host.tellHub(meta.teamId, {
          kind: "created",
          news: {
            approval,
            ownerUserId: meta.ownerUserId,
            recipients: meta.policy.notify,
            lockScreen: meta.policy.lockScreen,
            ladder: this.host.opened !== undefined,
          },
        }),
      );
      if (approval.type !== "elicitation" && approval.options.length === 0) {
        // Team policy hid every option the agent offered: nobody could ever decide it.
        this.resolve(this.store.pendingById(approval.id) as PendingRow, { state: "denied", reason: "invalid" }, now);
      } else this.host.opened?.(approval, meta, now);
      return approval;
    });
  }

  /**
   * The one way out of `pending`. Synchronous from the read to the write, so no other event
   * can interleave: each request is claimed, and answered, exactly once.
   */
  resolve(row: PendingRow, r: Resolution, now: number): Approval | null {
    return this.atomically(() => {
      const approval = resolvedApproval(JSON.parse(row.record) as Approval, r, now);
      const answer = this.answerFor(row, r, approval.type);
      const stepUps = this.store.resolve(row.id, r.state, approval, answer);
      if (!stepUps) return null;
      const meta = this.store.meta();
      if (meta) {
        const actor = r.decidedBy ? `user:${r.decidedBy.userId}` : r.rule ? `rule:${r.rule.id}` : "system";
        this.host.outbox.enqueue({
          op: "approval",
          teamId: meta.teamId,
          ownerUserId: meta.ownerUserId,
          approval,
          ...(stepUps.length > 0 && { stepUps }),
        });
        this.host.outbox.enqueue(auditOp(meta, approval, actor, `approval.${r.state}`, now));
      }
      this.afterCommit(() => {
        this.host.deliver(row, answer);
        if (meta) this.host.tellHub(meta.teamId, { kind: "resolved", approval, ownerUserId: meta.ownerUserId });
      });
      return approval;
    });
  }

  /**
   * Resolves every row with the same resolution, each in its own transaction: a row whose
   * resolution throws is quarantined and the others still end.
   */
  resolveAll(rows: PendingRow[], r: Resolution, now: number): void {
    for (const row of rows) {
      try {
        this.resolve(row, r, now);
      } catch (error) {
        this.setAside(row, error, now);
      }
    }
  }

  /**
   * A row whose resolution threw: quarantined, and from then on it reads as `SET_ASIDE` (store.ts).
   * Its agent is answered fail-closed at once, never left waiting; the outbox (D1, audit) and the
   * hub (cards, pushes, quota slot) are told it ended, where that can still be written.
   */
  private setAside(row: PendingRow, error: unknown, now: number): void {
    this.atomically(() => {
      this.host.quarantine(row, error, now);
      const approval = this.store.approval(row.id);
      const meta = this.store.meta();
      if (approval && meta) {
        try {
          this.atomically(() => {
            this.host.outbox.enqueue({ op: "approval", teamId: meta.teamId, ownerUserId: meta.ownerUserId, approval });
            this.host.outbox.enqueue(auditOp(meta, approval, "system", `approval.${SET_ASIDE.state}`, now));
          });
        } catch {
          // The outbox cannot take it either: the dead-letter count reports the row (presence.ts).
        }
      }
      this.afterCommit(() => {
        this.host.deliver(row, this.failClosed(row));
        if (approval && meta) {
          this.host.tellHub(meta.teamId, { kind: "resolved", approval, ownerUserId: meta.ownerUserId });
        }
      });
    });
  }

  /** The fail-closed answer of a row set aside; `cancelled` when even its options cannot be read. */
  private failClosed(row: PendingRow): AgentAnswer {
    try {
      return this.answerFor(row, SET_ASIDE);
    } catch {
      return {
        outcome: { outcome: "cancelled" },
        _meta: { tapgate: { approvalId: row.id, reason: SET_ASIDE.reason } },
      };
    }
  }

  /**
   * Runs `work` as one storage transaction (inside another: a savepoint of it). What it hands
   * out with `afterCommit` leaves once the outermost transaction committed, and never when
   * the part that queued it rolled back. The shell runs each step of its sweep this way.
   */
  atomically<T>(work: () => T): T {
    const outer = this.effects;
    const mine: Array<() => void> = [];
    this.effects = mine;
    let result: T;
    try {
      result = this.host.transaction(work);
    } finally {
      this.effects = outer;
    }
    if (outer) outer.push(...mine);
    else for (const effect of mine) effect();
    return result;
  }

  /** Hands `effect` to the transaction being run, to run once it committed (at once outside one). */
  private afterCommit(effect: () => void): void {
    if (this.effects) this.effects.push(effect);
    else effect();
  }

  /**
   * The answer the agent gets for a row ending this way (recomputed for rows stored without one).
   * `type` is the record's, when the caller parsed it already.
   */
  answerFor(
    row: PendingRow,
    r: Parameters<typeof agentAnswer>[2] & Parameters<typeof elicitationAnswer>[1],
    type = (JSON.parse(row.record) as Approval).type,
  ): AgentAnswer {
    if (type === "elicitation") return elicitationAnswer(row.id, r);
    return agentAnswer(row.id, JSON.parse(row.agent_options) as PermissionOption[], r);
  }

  /**
   * A human decides. Time that ran out before the alarm got here ends the request, not a late
   * allow. The same person repeating the decision that ended it gets the stored result.
   */
  decide(d: DecisionInput, now: number): DecisionResult {
    const meta = this.store.meta();
    const row = this.store.row(d.approvalId);
    if (!meta || !row || meta.teamId !== d.teamId) return { ok: false, error: "not_found" };
    const lapsed = this.lapse(row, now) ?? this.disconnected(row, now);
    if (lapsed) return { ok: false, error: "already_resolved", approval: lapsed };
    const current = JSON.parse(row.record) as Approval;
    if (row.state !== "pending") {
      // A repeat gets the stored result: no second answer, outbox row, audit event or hub news.
      const repeat =
        current.type === "elicitation" ? isRepeatElicitation(current, row.answer, d) : isRepeatDecision(current, d);
      if (repeat) return { ok: true, approval: current };
      return { ok: false, error: lateDecisionError(current), approval: current };
    }
    if (current.type === "elicitation" && d.updatedInput !== undefined) {
      return { ok: false, error: "edit_not_supported", message: "an elicitation is answered, not edited" };
    }
    const check =
      current.type === "elicitation"
        ? checkElicitationDecision(meta, current, d)
        : checkDecision(meta, current, d, now);
    const card = !d.rule
      ? null
      : d.optionId === undefined
        ? {
            ok: false as const,
            error: "rule_not_possible" as const,
            message: "a rule is made only with an option of a permission request",
          }
        : cardRuleMatch(meta, current, { userId: d.userId, optionId: d.optionId, ...d.rule });
    // No rule is made from a high-risk request: that answer comes before asking for its step-up.
    if (card && !card.ok && (check.ok || check.error === "step_up_required")) {
      return { ok: false, error: card.error, message: card.message };
    }
    if (!check.ok) {
      if ("message" in check) return check;
      return check.error === "request_changed" || check.error === "second_approver_required"
        ? { ok: false, error: check.error, approval: current }
        : { ok: false, error: check.error };
    }
    if ("partial" in check)
      return { ok: true, approval: this.recordPartialAllow(meta, current, check.partial, d, now) };
    // The time it was shown to the decider goes on the record: the Stats screen's decision times.
    const shownAt = this.host.seenAt?.(row.id, d.userId) ?? null;
    const { decidedBy } = check.resolution;
    const resolution =
      shownAt === null || !decidedBy ? check.resolution : { ...check.resolution, decidedBy: { ...decidedBy, shownAt } };
    const approval = this.atomically(() => {
      // The proof keeps the step-ups that allowed (a deny needs none, whatever it carried).
      if (d.stepUp && resolution.state === "allowed") this.store.addStepUp(row.id, d.stepUp);
      return this.resolve(row, resolution, now);
    });
    if (!approval) return { ok: false, error: "already_decided", approval: current };
    return card?.ok ? { ok: true, approval, ruleMatch: card.match } : { ok: true, approval };
  }

  /** The rules this person's card may make from a pending approval of this team's session (rule-allow.ts). */
  ruleChoices(teamId: string, approvalId: string, userId: string): GateRuleChoices | null {
    const meta = this.store.meta();
    const approval = meta?.teamId === teamId ? this.store.approval(approvalId) : null;
    if (!meta || !approval) return null;
    return { choices: offeredRules(meta, approval, userId), highRisk: highRiskPatterns(meta.policy) };
  }

  /**
   * A high-risk allow short of its quorum ("1 of 2"): kept with its step-up, the request stays
   * pending, and the team sees it live. Nothing reaches the agent until the quorum is met or
   * someone denies.
   */
  private recordPartialAllow(
    meta: ServedSession,
    current: Approval,
    quorum: NonNullable<Approval["quorum"]>,
    d: DecisionInput,
    now: number,
  ): Approval {
    const approval = { ...current, quorum };
    return this.atomically(() => {
      // checkDecision let only a step-up'd allow through to here.
      this.store.addStepUp(current.id, d.stepUp as NonNullable<DecisionInput["stepUp"]>, approval);
      const stepUps = this.store.stepUps(current.id);
      this.host.outbox.enqueue({
        op: "approval",
        teamId: meta.teamId,
        ownerUserId: meta.ownerUserId,
        approval,
        stepUps,
      });
      this.host.outbox.enqueue(auditOp(meta, approval, `user:${d.userId}`, "approval.allow_recorded", now));
      this.afterCommit(() =>
        this.host.tellHub(meta.teamId, { kind: "updated", approval, ownerUserId: meta.ownerUserId }),
      );
      return approval;
    });
  }

  /** Resolves a pending row whose lifetime or HTTP lease is over; the resolved approval, or null. */
  lapse(row: StoredRow, now: number): Approval | null {
    if (row.state !== "pending") return null;
    const lapse = lapseOf(row as StoredRow & { expires_at: number }, now);
    return lapse ? this.resolve(row, lapse, now) : null;
  }

  /**
   * Ends a pending socket-held request whose agent could not receive an answer now (its socket
   * closed, closing, or silent for two heartbeats and not yet swept): `agent_disconnected`,
   * before any decision claims it, so no allow is recorded that the agent never got. The
   * resolved approval, or null when the agent can still be answered.
   */
  private disconnected(row: StoredRow, now: number): Approval | null {
    if (row.state !== "pending" || this.host.reachable(row, now)) return null;
    return this.resolve(row, { state: "denied", reason: "agent_disconnected" }, now);
  }

  /** Ends what is due at `now` among pending requests: expired lifetimes, then lapsed leases. */
  lapseDue(now: number): void {
    this.resolveAll(this.store.pendingExpiredBy(now), { state: "expired", reason: "expired" }, now);
    this.resolveAll(this.store.pendingLeaseLapsedBy(now), { state: "denied", reason: "agent_disconnected" }, now);
  }

  /** A revoked key: its pending requests are denied, now and whenever it rejoins. */
  revokeKey(keyId: string, now: number): number {
    this.store.revoke(keyId, now);
    const rows = this.store.pendingOfKey(keyId);
    this.resolveAll(rows, { state: "denied", reason: "key_revoked" }, now);
    return rows.length;
  }
}
