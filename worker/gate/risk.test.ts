import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import type { PermissionOption } from "../../sdk/src/protocol";
import { DEFAULT_POLICY, type TeamPolicy } from "../policy";
import type { DecisionInput, VerifiedStepUp } from "./api";
import { highRiskAllow, openingQuorum, riskOf } from "./risk";
import { checkDecision, EMPTY_INFO, newApproval } from "./rules";
import type { ServedSession } from "./store";

const OPTIONS: PermissionOption[] = [
  { optionId: "allow", name: "Allow", kind: "allow_once" },
  { optionId: "deny", name: "Deny", kind: "reject_once" },
];

const meta = (policy: Partial<TeamPolicy> = {}): ServedSession => ({
  teamId: "team",
  sessionId: "sess",
  ownerUserId: "ada",
  policy: { ...DEFAULT_POLICY, ...policy },
  policyVersion: 1,
  info: EMPTY_INFO,
});

function ask(command: string, policy: Partial<TeamPolicy> = {}): Approval {
  return newApproval({
    id: "apr_1",
    meta: meta(policy),
    params: {
      sessionId: "sess",
      toolCall: { toolCallId: "t1", kind: "execute", rawInput: { command } },
      options: OPTIONS,
    },
    knownToolCall: {},
    lifetimeMs: 60_000,
    now: 1_000,
  });
}

const stepUp = (a: Approval, over: Partial<VerifiedStepUp> = {}) =>
  ({ approvalId: a.id, requestHash: a.requestHash, userId: "ada", optionId: "allow", ...over }) as VerifiedStepUp;

const decision = (a: Approval, d: Partial<DecisionInput> = {}): DecisionInput => ({
  approvalId: a.id,
  teamId: "team",
  userId: "ada",
  name: "Ada",
  role: "approver",
  device: "web",
  optionId: "allow",
  requestHash: a.requestHash,
  ...d,
});

describe("riskOf", () => {
  it("the default patterns mark force pushes, rm -rf, DROP TABLE, terraform destroy, kubectl delete; also inside a chain", () => {
    const policy = DEFAULT_POLICY;
    const snapshot = (command: string) => ({
      toolCall: { toolCallId: "t", rawInput: { command } },
      session: EMPTY_INFO,
    });
    for (const command of [
      "git push --force origin main",
      "git push -f",
      "rm -rf /tmp/x",
      "psql -c 'drop table users'",
      "terraform destroy -auto-approve",
      "kubectl delete pod web-1",
      "cd app && rm -rf node_modules",
    ]) {
      expect(riskOf(policy, snapshot(command)), command).toBe("high");
    }
    for (const command of ["git push origin main", "rm -r build", "terraform plan", "kubectl get pods"]) {
      expect(riskOf(policy, snapshot(command)), command).toBe("normal");
    }
  });

  it("follows the team's patterns, and a copy of the policy from before tiers uses the defaults", () => {
    expect(ask("deploy prod", { highRisk: [{ command: "deploy prod*" }] }).risk).toBe("high");
    expect(ask("rm -rf build", { highRisk: [] }).risk).toBe("normal");
    const { highRisk: _, highRiskQuorum: __, ...old } = DEFAULT_POLICY;
    expect(
      riskOf(old as TeamPolicy, {
        toolCall: { toolCallId: "t", rawInput: { command: "rm -rf x" } },
        session: EMPTY_INFO,
      }),
    ).toBe("high");
  });

  it("the quorum is fixed at open: only on high-risk requests, only when the policy asks for 2", () => {
    expect(openingQuorum({ ...DEFAULT_POLICY, highRiskQuorum: 2 }, "high")).toEqual({ required: 2, allowedBy: [] });
    expect(openingQuorum({ ...DEFAULT_POLICY, highRiskQuorum: 2 }, "normal")).toBeUndefined();
    expect(openingQuorum(DEFAULT_POLICY, "high")).toBeUndefined();
    expect(ask("rm -rf x", { highRiskQuorum: 2 }).quorum).toEqual({ required: 2, allowedBy: [] });
  });
});

describe("an allow of a high-risk request", () => {
  const who = { userId: "ada", name: "Ada", device: "web" };

  it("needs a step-up bound to this approval, its requestHash, this person and this option", () => {
    const a = ask("rm -rf x");
    expect(highRiskAllow(a, decision(a), who, 2_000)).toEqual({ ok: false, error: "step_up_required" });
    expect(highRiskAllow(a, decision(a, { stepUp: stepUp(a) }), who, 2_000)).toEqual({ ok: true, complete: true });
    for (const wrong of [
      { approvalId: "apr_2" },
      { requestHash: "0".repeat(64) },
      { userId: "bob" },
      { optionId: "deny" },
    ]) {
      expect(highRiskAllow(a, decision(a, { stepUp: stepUp(a, wrong) }), who, 2_000)).toEqual({
        ok: false,
        error: "step_up_wrong_request",
      });
    }
  });

  it("a deny never needs one; a normal request's allow neither", () => {
    const a = ask("rm -rf x");
    expect(checkDecision(meta(), a, decision(a, { optionId: "deny" }))).toMatchObject({
      ok: true,
      resolution: { state: "denied" },
    });
    const normal = ask("ls");
    expect(checkDecision(meta(), normal, decision(normal))).toMatchObject({
      ok: true,
      resolution: { state: "allowed" },
    });
  });

  it("under a quorum of 2: the first allow is partial, the same person again is refused, another completes it", () => {
    const a = ask("rm -rf x", { highRiskQuorum: 2 });
    const first = checkDecision(meta(), a, decision(a, { stepUp: stepUp(a) }), 2_000);
    expect(first).toEqual({ ok: true, partial: { required: 2, allowedBy: [{ ...who, at: 2_000 }] } });
    const partial = { ...a, quorum: (first as { partial: Approval["quorum"] }).partial };
    expect(checkDecision(meta(), partial, decision(a, { stepUp: stepUp(a) }), 3_000)).toEqual({
      ok: false,
      error: "second_approver_required",
    });
    const bob = { userId: "bob", name: "Bob", device: "phone" };
    const second = checkDecision(meta(), partial, decision(a, { ...bob, stepUp: stepUp(a, { userId: "bob" }) }), 3_000);
    expect(second).toMatchObject({
      ok: true,
      resolution: {
        state: "allowed",
        decidedBy: bob,
        quorum: {
          required: 2,
          allowedBy: [
            { ...who, at: 2_000 },
            { ...bob, at: 3_000 },
          ],
        },
      },
    });
    expect(checkDecision(meta(), partial, decision(a, { ...bob, optionId: "deny" }))).toMatchObject({
      ok: true,
      resolution: { state: "denied" },
    });
  });
});
