/**
 * What the property test (invariants.test.ts) draws: a case is the team's quorum for high-risk
 * allows and a sequence of actions, each of which invariants-model.ts applies to the real Worker.
 * Owns the action vocabulary and its arbitraries; not what an action does or expects.
 */
import fc from "fast-check";

export type Option = "allow" | "deny" | "always" | "bogus";
export type Device = "web" | "phone" | "laptop";
export type ElicitationAction = "accept" | "decline" | "cancel";

export type Action =
  | { kind: "request" }
  | { kind: "httpRequest" }
  /** A socket request the team's default `highRisk` patterns make high-risk (a force push). */
  | { kind: "riskyRequest" }
  /** A socket `elicitation/create` (a form with one required field). */
  | { kind: "elicit" }
  | { kind: "decide"; pick: number; option: Option; staleHash: boolean; byColleague: boolean; device: Device }
  /** A decided request decided again: by its decider or the other member, with its option or the other. */
  | { kind: "repeat"; pick: number; sameOption: boolean; sameDecider: boolean; device: Device }
  /** A human allows a high-risk request with a passkey step-up (software authenticator). */
  | { kind: "stepUpAllow"; pick: number; byColleague: boolean }
  /** A human answers an elicitation (`accept` with the form's content). */
  | { kind: "answer"; pick: number; action: ElicitationAction; byColleague: boolean }
  /** One `POST /v1/approvals/decisions` over the picked requests (a pick may repeat). */
  | { kind: "batch"; picks: number[]; option: "allow" | "deny"; byColleague: boolean }
  /** An allow that makes a standing rule from the card (`rule: {}`): only the owner may. */
  | { kind: "allowWithRule"; pick: number; byColleague: boolean }
  /** `DELETE /v1/rules/:id` of a rule the run made: the owner ends it, the colleague (an approver) may not. */
  | { kind: "endRule"; pick: number; byColleague: boolean }
  /**
   * The agent's key is revoked; the agent goes on with a new key. With `gateFails`, the session's
   * gate fails the hub's one telling: then a human allows the picked request of the key
   * (`allowPick`), or the hub's alarm tells the gate again.
   */
  | { kind: "revokeKey"; gateFails: boolean; allowPick: number | null }
  /** The gate's alarm wakes `wakes` times: the escalation ladder climbs (nobody has a push device). */
  | { kind: "escalate"; wakes: number }
  /** A human decides an HTTP-held request while the agent's long poll waits for it. */
  | { kind: "longPoll"; pick: number; option: "allow" | "deny" }
  | { kind: "cancel"; pick: number }
  | { kind: "httpCancel"; pick: number }
  | { kind: "sessionCancel" }
  | { kind: "disconnect" }
  /** A human allows or denies a socket-held request while its agent's socket closes, in either order. */
  | { kind: "decideWhileClosing"; pick: number; option: "allow" | "deny"; closeFirst: boolean }
  | { kind: "timePasses" }
  | { kind: "restart" }
  /**
   * D1 refusing the team's writes, or the hub's `gateReport` throwing, while a human decides and
   * the gate's alarm wakes `wakes` times (as it does every 15 s for a held request); then the
   * fault lifts. Nothing may be lost: the next check finds D1 and the audit log agreeing.
   */
  | { kind: "outage"; of: "d1" | "hub"; wakes: number; decide: { pick: number; option: "allow" | "deny" } | null };

/** One case: a fresh team whose policy asks `quorum` people to allow a high-risk request, and what happens. */
export interface Case {
  quorum: 1 | 2;
  actions: Action[];
}

const device = fc.constantFrom<Device>("web", "phone", "laptop");
const allowOrDeny = fc.constantFrom("allow" as const, "deny" as const);
const of = <T>(arbitrary: fc.Arbitrary<T>, weight: number) => ({ arbitrary, weight });

export const action: fc.Arbitrary<Action> = fc.oneof(
  of(fc.constant({ kind: "request" as const }), 3),
  of(fc.constant({ kind: "httpRequest" as const }), 2),
  of(fc.constant({ kind: "riskyRequest" as const }), 1),
  of(fc.constant({ kind: "elicit" as const }), 1),
  of(
    fc.record({
      kind: fc.constant("decide" as const),
      pick: fc.nat(),
      option: fc.constantFrom<Option>("allow", "deny", "always", "bogus"),
      staleHash: fc.boolean(),
      byColleague: fc.boolean(),
      device,
    }),
    4,
  ),
  of(
    fc.record({
      kind: fc.constant("repeat" as const),
      pick: fc.nat(),
      sameOption: fc.boolean(),
      sameDecider: fc.boolean(),
      device,
    }),
    2,
  ),
  of(fc.record({ kind: fc.constant("stepUpAllow" as const), pick: fc.nat(), byColleague: fc.boolean() }), 2),
  of(
    fc.record({
      kind: fc.constant("answer" as const),
      pick: fc.nat(),
      action: fc.constantFrom<ElicitationAction>("accept", "decline", "cancel"),
      byColleague: fc.boolean(),
    }),
    1,
  ),
  of(
    fc.record({
      kind: fc.constant("batch" as const),
      picks: fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
      option: allowOrDeny,
      byColleague: fc.boolean(),
    }),
    1,
  ),
  of(fc.record({ kind: fc.constant("allowWithRule" as const), pick: fc.nat(), byColleague: fc.boolean() }), 1),
  of(fc.record({ kind: fc.constant("endRule" as const), pick: fc.nat(), byColleague: fc.boolean() }), 1),
  of(
    fc.record({
      kind: fc.constant("revokeKey" as const),
      gateFails: fc.boolean(),
      allowPick: fc.option(fc.nat(), { nil: null }),
    }),
    1,
  ),
  of(fc.record({ kind: fc.constant("escalate" as const), wakes: fc.integer({ min: 1, max: 3 }) }), 1),
  of(fc.record({ kind: fc.constant("longPoll" as const), pick: fc.nat(), option: allowOrDeny }), 1),
  of(fc.record({ kind: fc.constant("cancel" as const), pick: fc.nat() }), 1),
  of(fc.record({ kind: fc.constant("httpCancel" as const), pick: fc.nat() }), 1),
  of(fc.constant({ kind: "sessionCancel" as const }), 1),
  of(fc.constant({ kind: "disconnect" as const }), 1),
  of(
    fc.record({
      kind: fc.constant("decideWhileClosing" as const),
      pick: fc.nat(),
      option: allowOrDeny,
      closeFirst: fc.boolean(),
    }),
    1,
  ),
  of(fc.constant({ kind: "timePasses" as const }), 1),
  of(fc.constant({ kind: "restart" as const }), 1),
  of(
    fc.record({
      kind: fc.constant("outage" as const),
      of: fc.constantFrom("d1" as const, "hub" as const),
      wakes: fc.integer({ min: 1, max: 15 }),
      decide: fc.option(fc.record({ pick: fc.nat(), option: allowOrDeny }), { nil: null }),
    }),
    1,
  ),
);

export const testCase: fc.Arbitrary<Case> = fc.record({
  quorum: fc.constantFrom<1 | 2>(1, 2),
  actions: fc.array(action, { minLength: 1, maxLength: 14 }),
});
