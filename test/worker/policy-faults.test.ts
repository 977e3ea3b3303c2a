/**
 * A policy change is obeyed where its fan-out failed: inside workerd with real D1, the real hub
 * and real gates, one session's gate throws when the hub tells it the new policy. Its next
 * request's admission brings the newer policy along, so the request is held (and shown) under
 * the policy the team set, not the one the gate still had.
 */
import { runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { DEFAULT_HIGH_RISK } from "../../sdk/src/human/policy";
import type { SessionGate } from "../../worker/gate/session-gate";
import { SessionGate as Gate } from "../../worker/gate/session-gate";
import type { GateStore } from "../../worker/gate/store";
import {
  api,
  connectAgent,
  createKey,
  gateStub,
  hubShowsConnected,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import { stallGate } from "./stall";
import { openLive } from "./team-helpers";

afterEach(() => {
  vi.restoreAllMocks();
});

/** Telling the gate of session `sessionId` a new policy throws (a failing gate). */
function failingGate(sessionId: string): { failures: number } {
  const seen = { failures: 0 };
  const applyPolicy = Gate.prototype.applyPolicy;
  vi.spyOn(Gate.prototype, "applyPolicy").mockImplementation(async function (this: SessionGate, teamId, update) {
    if ((this as unknown as { store: GateStore }).store.meta()?.sessionId === sessionId) {
      seen.failures++;
      throw new Error("gate down");
    }
    return applyPolicy.call(this, teamId, update);
  });
  return seen;
}

/** The policy version session `sessionId`'s gate holds. */
const gatePolicyVersion = (teamId: string, sessionId: string) =>
  runInDurableObject(
    gateStub(teamId, sessionId),
    (gate) => (gate as unknown as { store: GateStore }).store.meta()?.policyVersion,
  );

const hubSeesConnected = (teamId: string, sessionId: string) =>
  vi.waitFor(async () => expect(await hubShowsConnected(teamId, sessionId)).toBe(true));

describe("a policy change one gate misses", () => {
  it("holds that gate's next request under the new policy, and no dashboard sees it drafted under the old", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("sess");
    const agent = await connectAgent(key, sessionId);
    await agent.barrier();
    await hubSeesConnected(owner.teamId, sessionId);
    const seen = failingGate(sessionId);

    // `rm -r build` (the request below) is not high-risk by default; the team makes it so.
    const highRisk = [...DEFAULT_HIGH_RISK, { command: "rm -r *" }];
    const put = await api("/v1/policy", { method: "PUT", cookie: owner.cookie, body: JSON.stringify({ highRisk }) });
    expect(put.status).toBe(200);
    // The route may answer before the hub reached that gate (it waits on the gates 1 s at most).
    await vi.waitFor(() => expect(seen.failures).toBe(1));

    const live = await openLive(owner);
    await agent.ask(1, permissionParams(sessionId));
    const [approval] = await pendingApprovals(owner, sessionId);
    expect(approval?.risk).toBe("high");

    const ours = (f: Record<string, unknown>) =>
      f.type === "approval" && (f.approval as Approval).sessionId === sessionId;
    await live.next((f) => ours(f) && (f.approval as Approval).risk === "high");
    // Every frame of its card (the ladder's steps re-send it when the test runs long) says high.
    expect(new Set(live.frames.filter(ours).map((f) => (f.approval as Approval).risk))).toEqual(new Set(["high"]));
    live.ws.close();
  });
});

describe("a policy change one gate never answers", () => {
  it("is answered within the route's budget, and reaches that gate once it answers", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const stuckId = unique("stuck");
    const liveId = unique("live");
    await connectAgent(key, stuckId);
    await connectAgent(key, liveId);
    await hubSeesConnected(owner.teamId, stuckId);
    await hubSeesConnected(owner.teamId, liveId);
    const before = await gatePolicyVersion(owner.teamId, liveId);
    const stalled = await stallGate(owner.teamId, stuckId);
    try {
      const highRisk = [...DEFAULT_HIGH_RISK, { command: "rm -r *" }];
      const put = await api("/v1/policy", { method: "PUT", cookie: owner.cookie, body: JSON.stringify({ highRisk }) });
      expect(put.status).toBe(200);
      expect(await gatePolicyVersion(owner.teamId, liveId)).toBeGreaterThan(before ?? 0);
    } finally {
      stalled.release();
    }
    await vi.waitFor(async () =>
      expect(await gatePolicyVersion(owner.teamId, stuckId)).toBe(await gatePolicyVersion(owner.teamId, liveId)),
    );
  }, 30_000);
});
