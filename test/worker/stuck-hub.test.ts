/**
 * A hub that never answers (its input gate held: `stall.ts`) costs a gate's alarm one bounded
 * wait (`worker/deadline.ts`), never its expiry and lease sweeps; the ladder's climb is started by
 * the alarm, not awaited, and its outcome is seen by the gate when the hub answers.
 */
import { runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Ladder } from "../../worker/gate/escalation-rules";
import { fakePushService } from "./fake-push";
import { createKey, gateStub, json, type Member, ORIGIN, permissionParams, signUp, unique } from "./helpers";
import { type StalledHub, stallHub } from "./stall";

let stalled: StalledHub | null = null;
let fake: ReturnType<typeof fakePushService>;
beforeEach(() => {
  fake = fakePushService();
});
afterEach(() => {
  stalled?.release();
  vi.restoreAllMocks();
});

async function askOverHttp(key: string, sessionId: string): Promise<string> {
  const created = await SELF.fetch(`${ORIGIN}/v1/agent/sessions/${sessionId}/permissions`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify(permissionParams(sessionId)),
  });
  expect(created.status).toBe(201);
  return (await json<{ approvalId: string }>(created)).approvalId;
}

/** The gate's own row: its state and reason. */
function row(owner: Member, sessionId: string, approvalId: string) {
  return runInDurableObject(gateStub(owner.teamId, sessionId), (_, state) => {
    const r = state.storage.sql.exec("SELECT state, record FROM approvals WHERE id = ?", approvalId).one();
    return { state: r.state, reason: (JSON.parse(r.record as string) as { reason: string | null }).reason };
  });
}

function setColumn(owner: Member, sessionId: string, approvalId: string, column: "expires_at" | "lease_until") {
  return runInDurableObject(gateStub(owner.teamId, sessionId), (_, state) => {
    state.storage.sql.exec(`UPDATE approvals SET ${column} = ? WHERE id = ?`, Date.now() - 1, approvalId);
  });
}

function ladderOf(owner: Member, sessionId: string, approvalId: string): Promise<Ladder> {
  return runInDurableObject(gateStub(owner.teamId, sessionId), (_, state) => {
    const r = state.storage.sql.exec("SELECT ladder FROM ladders WHERE approval_id = ?", approvalId).one();
    return JSON.parse(r.ladder as string) as Ladder;
  });
}

/** Waits until the gate recorded the hub's outcome of the `at`-th fired step. */
function untilAcked(owner: Member, sessionId: string, approvalId: string, at: number) {
  return vi.waitFor(async () => {
    if (!(await ladderOf(owner, sessionId, approvalId)).fired[at]?.acked) throw new Error("not acknowledged yet");
  });
}

/** As if the request had been pending for `ms` more: the ladder's next step is due now. */
function ageLadder(owner: Member, sessionId: string, approvalId: string, ms: number) {
  return runInDurableObject(gateStub(owner.teamId, sessionId), (_, state) => {
    const r = state.storage.sql.exec("SELECT ladder FROM ladders WHERE approval_id = ?", approvalId).one();
    const ladder = JSON.parse(r.ladder as string) as Ladder;
    ladder.openedAt -= ms;
    for (const f of ladder.fired) f.at -= ms;
    state.storage.sql.exec(
      "UPDATE ladders SET ladder = ?, next_at = ? WHERE approval_id = ?",
      JSON.stringify(ladder),
      Date.now(),
      approvalId,
    );
  });
}

/** Two requests held over HTTP in one session, their first escalation step (a push to the owner's phone) acknowledged. */
async function twoRequests() {
  const owner = await signUp();
  await fake.addPhone(owner, "Pixel 8");
  const { key } = await createKey(owner);
  const sessionId = unique("stuck");
  const first = await askOverHttp(key, sessionId);
  const second = await askOverHttp(key, sessionId);
  for (const id of [first, second]) {
    await untilAcked(owner, sessionId, id, 0);
  }
  return { owner, sessionId, first, second };
}

describe("a gate whose hub never answers", () => {
  it("still expires its due requests and sweeps lapsed leases, alarm after alarm", async () => {
    const { owner, sessionId, first, second } = await twoRequests();
    const gate = gateStub(owner.teamId, sessionId);
    stalled = await stallHub(owner.teamId);

    // The first alarm expires one request: its news and outbox rows go to a hub that never answers.
    await setColumn(owner, sessionId, first, "expires_at");
    expect(await runDurableObjectAlarm(gate)).toBe(true);
    expect(await row(owner, sessionId, first)).toEqual({ state: "expired", reason: "expired" });

    // The next alarm still runs: the other request's lease lapsed meanwhile.
    await setColumn(owner, sessionId, second, "lease_until");
    expect(await runDurableObjectAlarm(gate)).toBe(true);
    expect(await row(owner, sessionId, second)).toEqual({ state: "denied", reason: "agent_disconnected" });
  }, 30_000);

  it("the alarm starts a due escalation step without waiting for the hub; the gate records its outcome when it answers", async () => {
    const { owner, sessionId, first } = await twoRequests();
    const gate = gateStub(owner.teamId, sessionId);
    await ageLadder(owner, sessionId, first, 61_000);
    stalled = await stallHub(owner.teamId);

    expect(await runDurableObjectAlarm(gate)).toBe(true);
    const asked = await ladderOf(owner, sessionId, first);
    expect(asked.fired.map((f) => [f.step, f.acked])).toEqual([
      [0, true],
      [1, false],
    ]);

    stalled.release();
    await untilAcked(owner, sessionId, first, 1);
  }, 30_000);
});
