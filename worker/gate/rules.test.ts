import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import type { PermissionOption } from "../../sdk/src/protocol";
import { DEFAULT_POLICY } from "../policy";
import type { DecisionInput, GateJoin } from "./api";
import {
  agentAnswer,
  checkDecision,
  DEAD_LETTER_REPLAY_MAX_MS,
  EMPTY_INFO,
  isRepeatDecision,
  joinedMeta,
  lapseOf,
  lateDecisionError,
  newApproval,
  OUTBOX_RETRY_MAX_MS,
  offeredOptions,
  replayDelayMs,
  requestLifetimeMs,
  retryDelayMs,
  withPolicy,
} from "./rules";
import type { ServedSession } from "./store";

const OPTIONS: PermissionOption[] = [
  { optionId: "allow", name: "Allow", kind: "allow_once" },
  { optionId: "always", name: "Always allow", kind: "allow_always" },
  { optionId: "deny", name: "Deny", kind: "reject_once" },
];

const meta: ServedSession = {
  teamId: "team",
  sessionId: "sess",
  ownerUserId: "owner",
  policy: DEFAULT_POLICY,
  policyVersion: 1,
  info: EMPTY_INFO,
};

function approval(overrides: Partial<ServedSession> = {}, now = 1_000): Approval {
  return newApproval({
    id: "apr_1",
    meta: { ...meta, ...overrides },
    params: { sessionId: "sess", toolCall: { toolCallId: "t1", title: "rm -rf build" }, options: OPTIONS },
    knownToolCall: { kind: "execute", title: "old title" },
    lifetimeMs: 60_000,
    now,
  });
}

const decision = (d: Partial<DecisionInput> = {}): DecisionInput => ({
  approvalId: "apr_1",
  teamId: "team",
  userId: "owner",
  name: "Ada",
  role: "approver",
  device: "web",
  optionId: "allow",
  requestHash: approval().requestHash,
  ...d,
});

describe("offered options", () => {
  it("once-only policy hides standing rules; without it every option is offered", () => {
    expect(offeredOptions(OPTIONS, DEFAULT_POLICY).map((o) => o.optionId)).toEqual(["allow", "deny"]);
    expect(offeredOptions(OPTIONS, { ...DEFAULT_POLICY, onceOnlyOptions: false })).toHaveLength(3);
  });

  it("a new approval offers what the policy allows, over what session/update told, hashed", () => {
    const a = approval();
    expect(a.options.map((o) => o.optionId)).toEqual(["allow", "deny"]);
    expect(a.snapshot.toolCall).toEqual({ kind: "execute", title: "rm -rf build", toolCallId: "t1" });
    expect(a).toMatchObject({ state: "pending", createdAt: 1_000, expiresAt: 61_000 });
    expect(a.requestHash).toMatch(/^[0-9a-f]{64}$/);
    expect(approval({}, 2_000).requestHash).toBe(a.requestHash); // the snapshot, not the time
  });

  it("the agent may ask for less time than the team's lifetime, never more", () => {
    expect(requestLifetimeMs(DEFAULT_POLICY, undefined)).toBe(DEFAULT_POLICY.lifetimeMs);
    expect(requestLifetimeMs(DEFAULT_POLICY, 1_000)).toBe(1_000);
    expect(requestLifetimeMs(DEFAULT_POLICY, DEFAULT_POLICY.lifetimeMs * 2)).toBe(DEFAULT_POLICY.lifetimeMs);
  });
});

describe("the agent's answer", () => {
  it("a human's choice is the selected option, with who decided (no user id)", () => {
    const decidedBy = { userId: "u", name: "Ada", device: "phone" };
    expect(agentAnswer("apr_1", OPTIONS, { reason: "decided", optionId: "allow", decidedBy })).toEqual({
      outcome: { outcome: "selected", optionId: "allow" },
      _meta: { tapgate: { approvalId: "apr_1", reason: "decided", decidedBy: { name: "Ada", device: "phone" } } },
    });
  });

  it("fails closed without a human: the agent's own reject_once, else cancelled", () => {
    for (const reason of ["expired", "agent_disconnected", "key_revoked", "service_restart", "invalid"] as const) {
      expect(agentAnswer("apr_1", OPTIONS, { reason }).outcome).toEqual({ outcome: "selected", optionId: "deny" });
      expect(agentAnswer("apr_1", OPTIONS.slice(0, 2), { reason }).outcome).toEqual({ outcome: "cancelled" });
    }
  });

  it("the agent's own cancel, or the session's, is cancelled", () => {
    expect(agentAnswer("apr_1", OPTIONS, { reason: "agent_cancelled" }).outcome).toEqual({ outcome: "cancelled" });
    expect(agentAnswer("apr_1", OPTIONS, { reason: "session_cancelled" }).outcome).toEqual({ outcome: "cancelled" });
  });
});

describe("lapse", () => {
  it("the lifetime ends first, then an HTTP lease that was not renewed", () => {
    expect(lapseOf({ expires_at: 100, lease_until: null }, 99)).toBeNull();
    expect(lapseOf({ expires_at: 100, lease_until: null }, 100)).toEqual({ state: "expired", reason: "expired" });
    expect(lapseOf({ expires_at: 100, lease_until: 50 }, 100)).toEqual({ state: "expired", reason: "expired" });
    expect(lapseOf({ expires_at: 100, lease_until: 50 }, 50)).toEqual({
      state: "denied",
      reason: "agent_disconnected",
    });
    expect(lapseOf({ expires_at: 100, lease_until: 60 }, 59)).toBeNull();
  });
});

describe("decisions", () => {
  const pending = approval();

  it("an allow option allows and a reject option denies, decided by the human", () => {
    expect(checkDecision(meta, pending, decision())).toEqual({
      ok: true,
      resolution: {
        state: "allowed",
        reason: "decided",
        optionId: "allow",
        decidedBy: { userId: "owner", name: "Ada", device: "web" },
      },
    });
    expect(checkDecision(meta, pending, decision({ optionId: "deny" }))).toMatchObject({
      ok: true,
      resolution: { state: "denied" },
    });
  });

  it("refuses viewers, non-owners under an owner-only policy, hidden options and a changed request", () => {
    expect(checkDecision(meta, pending, decision({ role: "viewer" }))).toEqual({
      ok: false,
      error: "role_may_not_decide",
    });
    const ownerOnly = { ...meta, policy: { ...DEFAULT_POLICY, deciders: "session_owner" as const } };
    expect(checkDecision(ownerOnly, pending, decision({ userId: "other" }))).toEqual({
      ok: false,
      error: "not_session_owner",
    });
    expect(checkDecision(ownerOnly, pending, decision()).ok).toBe(true);
    expect(checkDecision(meta, pending, decision({ optionId: "always" }))).toEqual({
      ok: false,
      error: "option_not_offered",
    });
    expect(checkDecision(meta, pending, decision({ requestHash: "0".repeat(64) }))).toEqual({
      ok: false,
      error: "request_changed",
    });
  });

  it("a late decision: 'already decided' after a human, 'already resolved' after anything else", () => {
    expect(lateDecisionError({ ...pending, state: "allowed", reason: "decided" })).toBe("already_decided");
    expect(lateDecisionError({ ...pending, state: "expired", reason: "expired" })).toBe("already_resolved");
  });

  it("a repeat is the same person's same option and hash, from any device; nothing else", () => {
    const decided = {
      ...pending,
      state: "allowed" as const,
      reason: "decided" as const,
      optionId: "allow",
      decidedBy: { userId: "owner", name: "Ada", device: "phone" },
    };
    expect(isRepeatDecision(decided, decision())).toBe(true); // from "web", decided on "phone"
    expect(isRepeatDecision(decided, decision({ optionId: "deny" }))).toBe(false);
    expect(isRepeatDecision(decided, decision({ userId: "other" }))).toBe(false);
    expect(isRepeatDecision(decided, decision({ requestHash: "0".repeat(64) }))).toBe(false);
    const expired = { ...pending, state: "expired" as const, reason: "expired" as const };
    expect(isRepeatDecision(expired, decision())).toBe(false);
    expect(isRepeatDecision(pending, decision())).toBe(false);
  });
});

describe("joins and policy versions", () => {
  const join: GateJoin = {
    teamId: "team",
    sessionId: "sess",
    ownerUserId: "owner",
    keyId: "k",
    userId: "owner",
    policy: DEFAULT_POLICY,
    policyVersion: 1,
  };
  const newer = { ...DEFAULT_POLICY, lifetimeMs: 120_000 };

  it("the newer policy wins a join, and what hello told is kept", () => {
    const known = { ...meta, policy: newer, policyVersion: 2, info: { ...EMPTY_INFO, title: "kept" } };
    expect(joinedMeta(known, join)).toMatchObject({ policy: newer, policyVersion: 2, info: { title: "kept" } });
    expect(joinedMeta(known, { ...join, policyVersion: 3 })).toMatchObject({
      policy: DEFAULT_POLICY,
      policyVersion: 3,
    });
    expect(joinedMeta(null, join)).toMatchObject({ policyVersion: 1, info: EMPTY_INFO });
  });

  it("a join whose policy the hub could not tell keeps the session's last one, and has none to give a new session", () => {
    const known = { ...meta, policy: newer, policyVersion: 2, info: { ...EMPTY_INFO, title: "kept" } };
    const unknown = { ...join, policy: null, policyVersion: 0 };
    expect(joinedMeta(known, unknown)).toMatchObject({ policy: newer, policyVersion: 2, info: { title: "kept" } });
    expect(joinedMeta(null, unknown)).toBeNull();
  });

  it("takes up only a newer policy of its own team", () => {
    expect(withPolicy(meta, "team", { policy: newer, version: 2 })).toMatchObject({ policy: newer, policyVersion: 2 });
    expect(withPolicy(meta, "team", { policy: newer, version: 1 })).toBeNull();
    expect(withPolicy(meta, "other", { policy: newer, version: 9 })).toBeNull();
    expect(withPolicy(null, "team", { policy: newer, version: 9 })).toBeNull();
  });
});

describe("outbox backoff", () => {
  it("doubles from 5 s to at most 5 minutes", () => {
    expect([0, 1, 2, 3].map(retryDelayMs)).toEqual([5_000, 10_000, 20_000, 40_000]);
    expect(retryDelayMs(10)).toBe(OUTBOX_RETRY_MAX_MS);
    expect(retryDelayMs(1_000)).toBe(OUTBOX_RETRY_MAX_MS);
  });

  it("replays dead letters again after 1 minute, doubling to at most 6 hours", () => {
    expect([0, 1, 2].map(replayDelayMs)).toEqual([60_000, 120_000, 240_000]);
    expect(replayDelayMs(1_000)).toBe(DEAD_LETTER_REPLAY_MAX_MS);
  });
});
