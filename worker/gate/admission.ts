/**
 * Admission: a new request passes the session's own checks, then the team's quotas (one RPC to
 * the team's hub, which counts across all the team's sessions), and only then is held. Fail
 * closed: a hub that fails or answers later than `ADMIT_TIMEOUT_MS` refuses the request; it is
 * never held unchecked, and never held without an answer.
 *
 * The hub's admission also hands over the standing rules that can apply to the session, so the
 * hold can match them with no D1 (state-machine.ts `open`), and the team's policy when the hub
 * knows a newer one than the session's (a policy fan-out that missed this gate): it is taken up
 * before the hold, so no request is held under a policy the team already replaced (a take-up that
 * fails refuses the request). The ask carries the request as it would be held (its card), so the
 * hub can show it on the dashboards while the gate holds it;
 * a request that is then not held after all is released, which takes the card down again, and a
 * decision or read that names a request still being admitted waits for it (`settled`).
 *
 * Owns: the order of those steps and the refusals they give. Does not own: the checks and the
 * hold (state-machine.ts), the counting (the hub's `quotas.ts`), or the replies (the transports).
 */
import type { Approval } from "../../sdk/src/approval";
import type { AgentAsk } from "../../sdk/src/elicitation-protocol";
import type { StandingRule } from "../../sdk/src/rules";
import { orFallback, REQUEST_BUDGET_MS } from "../deadline";
import { limitsOf, type VersionedPolicy } from "../policy";
import type { GateHub, GateNews, QuotaVerdict } from "./hub";
import type { Refusal } from "./intake";
import type { StateMachine } from "./state-machine";
import type { Holder, ServedSession } from "./store";
import { jsonBytes } from "./stored-snapshot";

/** The longest the hub may take to admit a request (the request path's budget); later is a refusal. */
export const ADMIT_TIMEOUT_MS = REQUEST_BUDGET_MS;
/** What an agent refused because the quotas could not be checked is told to wait. */
const UNAVAILABLE_RETRY_MS = 1_000;

export interface AdmissionHost {
  machine: StateMachine;
  /** The session as it is now: a policy change may have come in while the hub was asked. */
  session(): ServedSession | null;
  /** Whether the key was revoked (the gate remembers revoked keys). */
  isRevoked(keyId: string): boolean;
  /** The team's hub, called and awaited. */
  hub(teamId: string): GateHub;
  /** News for the hub in the background (the gate's `HubMail`). */
  tellHub(teamId: string, news: GateNews): void;
  /** The hub knows a newer team policy than the session's (its fan-out missed this gate): taken up now. */
  newerPolicy(teamId: string, policy: VersionedPolicy): void;
}

type Verdict = QuotaVerdict | { ok: false; unavailable: true };

const NOT_HELD: Refusal = { refused: "not_held", message: "the request could not be held; nothing was held" };

export class Admission {
  /** Requests being admitted, by approval id, each until it is held or refused. */
  private readonly admitting = new Map<string, Promise<unknown>>();

  constructor(private readonly host: AdmissionHost) {}

  /**
   * Holds a new request once the team's quotas admit it, or says why not. `holderAlive` tells
   * whether whoever would be answered is still there after the wait (a socket may close).
   */
  async open(
    meta: ServedSession,
    holder: Holder,
    params: AgentAsk,
    now: number,
    holderAlive: () => boolean = () => true,
  ): Promise<Approval | Refusal> {
    const checked = this.host.machine.check(meta, params);
    if ("refused" in checked) return checked;
    const approvalId = this.host.machine.newApprovalId();
    const card = this.host.machine.draft(meta, holder, params, now, approvalId, checked.lifetimeMs);
    const opening = this.admitAndHold(meta, holder, params, now, card, holderAlive);
    this.admitting.set(approvalId, opening);
    try {
      return await opening;
    } finally {
      this.admitting.delete(approvalId);
    }
  }

  /**
   * Settles once the request of this id is held or refused, if it is being admitted now
   * (undefined otherwise). The hub may show a request as it admits it, so a decision or a read
   * can name one that is not held yet: it waits here, and never finds "not found" in between.
   */
  settled(approvalId: string): Promise<void> | undefined {
    return this.admitting.get(approvalId)?.then(
      () => undefined,
      () => undefined,
    );
  }

  private async admitAndHold(
    meta: ServedSession,
    holder: Holder,
    params: AgentAsk,
    now: number,
    card: Approval,
    holderAlive: () => boolean,
  ): Promise<Approval | Refusal> {
    const { teamId } = meta;
    const verdict = await this.admit(meta, {
      approvalId: card.id,
      keyId: holder.keyId,
      sessionId: meta.sessionId,
      ownerUserId: meta.ownerUserId,
      expiresAt: card.expiresAt,
      limits: limitsOf(meta.policy),
      policyVersion: meta.policyVersion ?? 0,
      storedBytes: jsonBytes(card),
      ...(decidable(card) && { card }),
    });
    // Taken up before the hold, which drafts the request again from the session as it is then.
    const tookUp = this.takeUpPolicy(teamId, verdict);
    if (!verdict.ok) {
      // The hub may have counted it after all (an answer that came too late): free the slot.
      if ("unavailable" in verdict) this.release(teamId, card.id);
      return refusalOf(verdict);
    }
    const opened = tookUp ? this.hold(holder, params, now, card.id, holderAlive, verdict.rules ?? []) : NOT_HELD;
    if ("refused" in opened) this.release(teamId, card.id);
    return opened;
  }

  /**
   * Holds an admitted request, with what changed during the wait taken into account: the
   * holder gone, its key revoked, a newer policy. A failure to hold is a refusal like any other,
   * so the slot is freed and the agent answered.
   */
  private hold(
    holder: Holder,
    params: AgentAsk,
    now: number,
    approvalId: string,
    holderAlive: () => boolean,
    rules: readonly StandingRule[],
  ): Approval | Refusal {
    if (!holderAlive()) return { refused: "holder_gone", message: "the socket closed before the request was held" };
    const session = this.host.session();
    if (!session || this.host.isRevoked(holder.keyId)) {
      return { refused: "key_revoked", message: "this API key was revoked" };
    }
    try {
      // The rules' expiry at the time after the wait: one may have ended while the hub was asked.
      return this.host.machine.open(session, holder, params, now, approvalId, rules, Date.now());
    } catch {
      return NOT_HELD;
    }
  }

  /** Whether the verdict's newer policy, if any, was taken up: a request is never held under the older one. */
  private takeUpPolicy(teamId: string, verdict: Verdict): boolean {
    if (!("policy" in verdict && verdict.policy)) return true;
    try {
      this.host.newerPolicy(teamId, verdict.policy);
      return true;
    } catch {
      return false;
    }
  }

  private admit(meta: ServedSession, ask: Parameters<GateHub["admitRequest"]>[1]): Promise<Verdict> {
    const unavailable: Verdict = { ok: false, unavailable: true };
    return orFallback<Verdict>(
      this.host.hub(meta.teamId).admitRequest(meta.teamId, ask),
      ADMIT_TIMEOUT_MS,
      "hub.admitRequest",
      unavailable,
    );
  }

  private release(teamId: string, approvalId: string): void {
    this.host.tellHub(teamId, { kind: "released", approvalId });
  }
}

/** Whether a human could decide the request as drafted: the hold ends one whose every option the policy hid. */
function decidable(card: Approval): boolean {
  return card.type === "elicitation" || card.options.length > 0;
}

function refusalOf(verdict: Exclude<Verdict, { ok: true }>): Refusal {
  // A revocation this gate has not heard yet: the hub knows it.
  if ("keyRevoked" in verdict) return { refused: "key_revoked", message: "this API key was revoked" };
  if ("unavailable" in verdict) {
    const message = "the team's quotas could not be checked; nothing was held";
    return { refused: "quota_unavailable", message, retryAfterMs: UNAVAILABLE_RETRY_MS };
  }
  const message = `over the team's ${verdict.limit} limit; retry in ${Math.ceil(verdict.retryAfterMs / 1000)} s`;
  return { refused: "quota", message, limit: verdict.limit, retryAfterMs: verdict.retryAfterMs };
}
