/**
 * A gate's news its hub never gets (the hub's `gateReport` throws), where no retried outbox row
 * stands for it: a session's state and a released quota slot. Inside workerd with real D1, the
 * real hub and gates, the gate's alarm run as production runs it. What the news leaves behind,
 * and what repairs it (docs/faults.md, "The outbox and hub news").
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { PRESENCE_REPORT_MS } from "../../worker/gate/hub";
import type { GateNews, GateReport } from "../../worker/hub/api";
import { TeamHub } from "../../worker/hub/team-hub";
import {
  connectAgent,
  createKey,
  gateStub,
  hubShowsConnected,
  hubStub,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import { simulatedClock } from "./outbox-faults";

afterEach(() => {
  vi.restoreAllMocks();
});

/** Every hub's `gateReport` throws until restored; the news it was handed, in order. */
function reportsLost() {
  const lost: GateNews[] = [];
  const spy = vi.spyOn(TeamHub.prototype, "gateReport").mockImplementation(async (_teamId, report: GateReport) => {
    lost.push(...report.news);
    throw new Error("hub unavailable");
  });
  return { lost, restore: () => spy.mockRestore() };
}

/** The hub's own copy of request `approvalId`'s state (the card its dashboards show), if any. */
const hubCardState = (teamId: string, approvalId: string) =>
  runInDurableObject(hubStub(teamId), (_hub, state) => {
    const row = state.storage.sql.exec("SELECT state FROM approvals WHERE id = ?", approvalId).toArray()[0];
    return row?.state as string | undefined;
  });

describe("a lost `session` report", () => {
  it("is repaired by the session's next report, PRESENCE_REPORT_MS later, from the gate's alarm", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("lost-session");
    const reports = reportsLost();
    await connectAgent(key, sessionId);
    await vi.waitFor(() => expect(reports.lost).toContainEqual(expect.objectContaining({ kind: "session" })));
    reports.restore();
    expect(await hubShowsConnected(owner.teamId, sessionId)).toBeNull();

    // Ten minutes on (the report's time moved back, so the socket is not silent meanwhile).
    const gate = gateStub(owner.teamId, sessionId);
    await runInDurableObject(gate, (_gate, state) => {
      state.storage.sql.exec("UPDATE meta SET v = CAST(v AS INTEGER) - ? WHERE k = 'reported_at'", PRESENCE_REPORT_MS);
    });
    expect(await runDurableObjectAlarm(gate)).toBe(true);
    await vi.waitFor(async () => expect(await hubShowsConnected(owner.teamId, sessionId)).toBe(true));
  });
});

describe("a lost `released` report", () => {
  it("leaves the slot counted and the card up until the request's expiry at most, then frees the slot", async () => {
    const owner = await signUp();
    const { id: keyId, key } = await createKey(owner);
    const sessionId = unique("lost-release");
    const agent = await connectAgent(key, sessionId);
    await agent.barrier();
    const hub = hubStub(owner.teamId);
    const gate = gateStub(owner.teamId, sessionId);
    // The gate's storage refuses to hold the request, after the hub admitted it.
    await runInDurableObject(gate, (_gate, state) => {
      state.storage.sql.exec(
        "CREATE TRIGGER refuse_hold BEFORE INSERT ON approvals BEGIN SELECT RAISE(ABORT, 'storage failed'); END",
      );
    });
    const reports = reportsLost();
    await agent.ask(1, permissionParams(sessionId));
    expect(await agent.next()).toMatchObject({
      id: 1,
      error: { message: expect.stringContaining("nothing was held") },
    });
    await vi.waitFor(() => expect(reports.lost).toContainEqual(expect.objectContaining({ kind: "released" })));
    reports.restore();
    const released = reports.lost.find((n) => n.kind === "released");
    if (released?.kind !== "released") throw new Error("no release was sent");

    // The release never arrived: the slot still counts, and the admission's card is still up.
    expect(await hub.quotaPending(keyId)).toBe(1);
    expect(await hubCardState(owner.teamId, released.approvalId)).toBe("pending");
    const expiresAt = await runInDurableObject(hub, (_hub, state) => {
      const row = state.storage.sql.exec("SELECT expires_at FROM approvals WHERE id = ?", released.approvalId).one();
      return row.expires_at as number;
    });

    // Past the request's expiry the slot no longer counts, and the key's next request is held.
    const clock = simulatedClock();
    try {
      clock.advanceTo(expiresAt + 1);
      expect(await hub.quotaPending(keyId)).toBe(0);
      await runInDurableObject(gate, (_gate, state) => state.storage.sql.exec("DROP TRIGGER refuse_hold"));
      await agent.ask(2, permissionParams(sessionId));
      expect(await pendingApprovals(owner, sessionId)).toHaveLength(1);
      expect(await hub.quotaPending(keyId)).toBe(1);
    } finally {
      clock.restore();
    }
  });
});
