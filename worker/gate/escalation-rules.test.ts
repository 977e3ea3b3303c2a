import { describe, expect, it } from "vitest";
import { DEFAULT_ESCALATION, teamPolicySchema } from "../../sdk/src/human/policy";
import {
  ACK_RETRY_MS,
  climbAfter,
  effectiveLadder,
  type FiredStep,
  type Ladder,
  nextMove,
  PRESENCE_GRACE_MS,
  progressOf,
  seenAtOf,
} from "./escalation-rules";

const T0 = 1_000_000;
const fired = (step: number, at: number, over: Partial<FiredStep> = {}): FiredStep => ({
  step,
  phase: "step",
  at,
  acked: true,
  reached: 1,
  to: ["Ada"],
  held: false,
  ...over,
});
const ladder = (over: Partial<Ladder> = {}): Ladder => ({
  steps: DEFAULT_ESCALATION,
  openedAt: T0,
  fired: [],
  seenAt: null,
  ...over,
});

describe("nextMove", () => {
  it("walks the default ladder at 0, 60 s, 3 min and 5 min, then is done", () => {
    expect(nextMove(ladder(), T0)).toEqual({ kind: "fire", step: 0, phase: "step" });
    const after0 = ladder({ fired: [fired(0, T0)] });
    expect(nextMove(after0, T0 + 1)).toEqual({ kind: "wait", at: T0 + 60_000 });
    expect(nextMove(after0, T0 + 60_000)).toEqual({ kind: "fire", step: 1, phase: "step" });
    const after1 = ladder({ fired: [fired(0, T0), fired(1, T0 + 60_000)] });
    expect(nextMove(after1, T0 + 60_001)).toEqual({ kind: "wait", at: T0 + 180_000 });
    const after2 = ladder({ fired: [fired(0, T0), fired(1, T0 + 60_000), fired(2, T0 + 180_000)] });
    expect(nextMove(after2, T0 + 300_000)).toEqual({ kind: "fire", step: 3, phase: "step" });
    const all = ladder({ fired: [0, 1, 2, 3].map((s) => fired(s, T0 + s)) });
    expect(nextMove(all, T0 + 10 * 60_000)).toEqual({ kind: "done" });
  });

  it("is done once seen, whatever is still due", () => {
    expect(nextMove(ladder({ fired: [fired(0, T0)], seenAt: T0 + 5 }), T0 + 600_000)).toEqual({ kind: "done" });
  });

  it("runs the next step at once while nothing fired so far reached anyone", () => {
    const nobody = ladder({ fired: [fired(0, T0, { reached: 0 })] });
    expect(nextMove(nobody, T0 + 10)).toEqual({ kind: "fire", step: 1, phase: "step" });
    const stillNobody = ladder({ fired: [fired(0, T0, { reached: 0 }), fired(1, T0 + 10, { reached: 0 })] });
    expect(nextMove(stillNobody, T0 + 20)).toEqual({ kind: "fire", step: 2, phase: "step" });
  });

  it("holds every later step while one is unacknowledged, and sends it again after the retry time", () => {
    const unacked = ladder({ fired: [fired(0, T0, { acked: false })] });
    expect(nextMove(unacked, T0 + 120_000 - 1)).toEqual({ kind: "fire", step: 0, phase: "step" });
    const fresh = ladder({ fired: [fired(0, T0 + 120_000 - 5, { acked: false })] });
    expect(nextMove(fresh, T0 + 120_000)).toEqual({ kind: "wait", at: T0 + 120_000 - 5 + ACK_RETRY_MS });
  });

  it("pushes a person shown the card live once the 20 s grace passed, once", () => {
    const held = ladder({ fired: [fired(0, T0, { held: true })] });
    expect(nextMove(held, T0 + PRESENCE_GRACE_MS - 1)).toEqual({ kind: "wait", at: T0 + PRESENCE_GRACE_MS });
    expect(nextMove(held, T0 + PRESENCE_GRACE_MS)).toEqual({ kind: "fire", step: 0, phase: "presence" });
    const followed = ladder({
      fired: [fired(0, T0, { held: true }), fired(0, T0 + PRESENCE_GRACE_MS, { phase: "presence" })],
    });
    expect(nextMove(followed, T0 + 30_000)).toEqual({ kind: "wait", at: T0 + 60_000 });
  });
});

describe("effectiveLadder", () => {
  it("keeps the team's ladder, and widens owner pushes to every approver under notify: all_approvers", () => {
    const policy = teamPolicySchema.parse({});
    expect(effectiveLadder(policy)).toEqual(DEFAULT_ESCALATION);
    const wide = effectiveLadder({ ...policy, notify: "all_approvers" });
    expect(wide.map((s) => s.to)).toEqual(["all_approvers", "all_approvers", "all_approvers", "session_owner"]);
  });
});

describe("the policy's escalation", () => {
  it("refuses unsorted steps, too many steps and member ids that are not ids, naming the field", () => {
    const unsorted = teamPolicySchema.safeParse({
      escalation: [
        { afterMs: 60_000, to: "session_owner", via: "push" },
        { afterMs: 0, to: "session_owner", via: "push" },
      ],
    });
    expect(unsorted.success).toBe(false);
    expect(unsorted.error?.issues[0]?.path).toEqual(["escalation", 1, "afterMs"]);
    const many = Array.from({ length: 9 }, (_, i) => ({ afterMs: i, to: "session_owner", via: "push" }));
    expect(teamPolicySchema.safeParse({ escalation: many }).success).toBe(false);
    const bad = teamPolicySchema.safeParse({ escalation: [{ afterMs: 0, to: ["bob"], via: "email" }] });
    expect(bad.error?.issues[0]?.path.slice(0, 2)).toEqual(["escalation", 0]);
  });
});

describe("seen and progress", () => {
  const receipts = {
    deliveredTo: [{ userId: "usr_a", name: "Ada", device: "Pixel", at: T0 + 1, shownAt: T0 + 2 }],
    seenBy: [{ userId: "usr_b", name: "Bea", at: T0 + 3 }],
  };

  it("counts only the owner's seeing when only the owner may decide", () => {
    expect(seenAtOf(receipts, { deciders: "any_approver" }, "usr_a")).toBe(T0 + 3);
    expect(seenAtOf(receipts, { deciders: "session_owner" }, "usr_a")).toBeNull();
  });

  it("says who it reached and who saw it, the latest escalation, and when nothing reached anyone", () => {
    const l = ladder({ fired: [fired(0, T0), fired(2, T0 + 180_000, { to: ["Bea", "Cy"] })] });
    expect(progressOf(7, "apr_x", l, receipts)).toEqual({
      requestId: 7,
      approvalId: "apr_x",
      deliveredTo: [{ name: "Ada", device: "Pixel", at: T0 + 1, shownAt: T0 + 2 }],
      seenBy: [{ name: "Bea", at: T0 + 3 }],
      escalatedTo: { names: ["Bea", "Cy"], via: "push", at: T0 + 180_000 },
    });
    const nobody = ladder({ fired: [fired(0, T0, { reached: 0 })] });
    expect(progressOf(7, "apr_x", nobody, { deliveredTo: [], seenBy: [] }).unreachable).toBe(true);
    // Still so while the next step is on its way; not before any step answered.
    const onItsWay = ladder({ fired: [fired(0, T0, { reached: 0 }), fired(1, T0 + 1, { acked: false, reached: 0 })] });
    expect(progressOf(7, "apr_x", onItsWay, { deliveredTo: [], seenBy: [] }).unreachable).toBe(true);
    const asked = ladder({ fired: [fired(0, T0, { acked: false, reached: 0 })] });
    expect(progressOf(7, "apr_x", asked, { deliveredTo: [], seenBy: [] }).unreachable).toBeUndefined();
    const mailed = ladder({ fired: [fired(0, T0, { reached: 0 }), fired(3, T0 + 5, { reached: 1 })] });
    // Mail is no device: still unreachable, and the mail is the escalation.
    expect(progressOf(7, "apr_x", mailed, { deliveredTo: [], seenBy: [] })).toMatchObject({
      unreachable: true,
      escalatedTo: { via: "email" },
    });
  });
});

describe("climbAfter", () => {
  const later = DEFAULT_ESCALATION.slice(1).map((s, i) => ({ step: i + 1, to: s.to, via: s.via }));

  it("climbs every later step while nothing fired reached anyone, and no further once something did", () => {
    expect(climbAfter(ladder(), 0, "step")).toEqual(later);
    const nobody = ladder({ fired: [fired(0, T0, { reached: 0, to: [] })] });
    expect(climbAfter(nobody, 1, "step")).toEqual(later.slice(1));
    expect(climbAfter(ladder({ fired: [fired(0, T0)] }), 1, "step")).toEqual([]);
  });

  it("never climbs from the last step or from a presence follow-up", () => {
    expect(climbAfter(ladder(), DEFAULT_ESCALATION.length - 1, "step")).toEqual([]);
    expect(climbAfter(ladder(), 0, "presence")).toEqual([]);
  });
});
