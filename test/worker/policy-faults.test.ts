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
import { api, connectAgent, createKey, hubStub, pendingApprovals, permissionParams, signUp, unique } from "./helpers";
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

const hubSeesConnected = (teamId: string, sessionId: string) =>
  vi.waitFor(async () => {
    const connected = await runInDurableObject(hubStub(teamId), (_, state) =>
      state.storage.sql.exec("SELECT 1 FROM sessions WHERE session_id = ? AND connected = 1", sessionId).toArray(),
    );
    expect(connected).toHaveLength(1);
  });

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
    expect(seen.failures).toBe(1);

    const live = await openLive(owner);
    await agent.ask(1, permissionParams(sessionId));
    const [approval] = await pendingApprovals(owner, sessionId);
    expect(approval?.risk).toBe("high");

    const ours = (f: Record<string, unknown>) =>
      f.type === "approval" && (f.approval as Approval).sessionId === sessionId;
    await live.next((f) => ours(f) && (f.approval as Approval).risk === "high");
    expect(live.frames.filter(ours).map((f) => (f.approval as Approval).risk)).toEqual(["high"]);
    live.ws.close();
  });
});
