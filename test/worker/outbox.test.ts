/**
 * The gate's outbox to D1 when D1 (or the hub's audit chain) keeps failing: retries back off,
 * failures are counted per row across restarts, and after DEAD_AFTER failed flushes in a row a
 * row becomes a dead letter instead of being retried forever, shown on the dashboard.
 */
import { abortAllDurableObjects, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { OutboxOp } from "../../worker/db";
import { DEAD_AFTER } from "../../worker/gate/outbox";
import { OUTBOX_RETRY_MS } from "../../worker/gate/rules";
import { api, askOnce, decide, flush, gateStub, json, pendingApprovals, permissionParams, signUp } from "./helpers";
import { openLive } from "./team-helpers";

type Stub = ReturnType<typeof gateStub>;

/** The rows still to deliver (acknowledged ones wait only for the next change to delete them). */
const outboxRows = (stub: Stub) =>
  runInDurableObject(stub, (gate, state) =>
    state.storage.sql
      .exec<{ op: string; attempts: number }>(
        "SELECT op, attempts FROM outbox WHERE seq > ? ORDER BY seq",
        gate.outbox.deliveredThrough,
      )
      .toArray(),
  );

/** Every row in the outbox's table, acknowledged or not: which approvals they are about. */
const storedRowSubjects = (stub: Stub) =>
  runInDurableObject(stub, (_, state) =>
    state.storage.sql
      .exec<{ op: string }>("SELECT op FROM outbox ORDER BY seq")
      .toArray()
      .map((r) => {
        const op = JSON.parse(r.op) as OutboxOp;
        return op.op === "audit" ? op.subject : op.op === "approval" ? op.approval.id : op.op;
      }),
  );

const deadLetters = (stub: Stub) =>
  runInDurableObject(stub, (_, state) =>
    state.storage.sql
      .exec<{ op: string; attempts: number }>("SELECT op, attempts FROM outbox_dead ORDER BY seq")
      .toArray()
      .map((r) => ({ op: JSON.parse(r.op) as OutboxOp, attempts: r.attempts })),
  );

const d1State = async (approvalId: string) =>
  (await env.DB.prepare("SELECT state FROM approvals WHERE id = ?").bind(approvalId).first<{ state: string }>())?.state;

/** From now on every flush of this gate fails, as if D1 were down. */
function breakOutbox(stub: Stub) {
  return runInDurableObject(stub, (gate) => {
    const deliver = vi.spyOn(gate.outbox, "deliver").mockRejectedValue(new Error("D1_ERROR: unavailable"));
    return () => deliver.mock.calls.length;
  });
}

describe("the gate's outbox when D1 fails", () => {
  it(`dead-letters rows after ${DEAD_AFTER} failed flushes in a row; later rows flow again`, async () => {
    const { owner, agent, sessionId, approval } = await askOnce();
    const stub = gateStub(owner.teamId, sessionId);
    const attempts = await breakOutbox(stub);

    // The human decides and the agent has its answer: D1 is not on that path.
    expect((await decide(owner, approval, "allow")).status).toBe(200);
    expect(await agent.next()).toMatchObject({
      id: 1,
      result: { outcome: { outcome: "selected", optionId: "allow" } },
    });

    // The decision's flush failed once; retries wait for the alarm instead of hammering D1.
    await vi.waitFor(async () => expect((await outboxRows(stub)).map((r) => r.attempts)).toEqual([1, 1]));
    expect(await runInDurableObject(stub, (_, state) => state.storage.getAlarm())).not.toBeNull();
    for (let i = 2; i < DEAD_AFTER; i++) {
      await runInDurableObject(stub, (gate) => gate.flushOutbox().catch(() => undefined));
    }
    expect((await outboxRows(stub)).map((r) => r.attempts)).toEqual([DEAD_AFTER - 1, DEAD_AFTER - 1]);
    expect(await deadLetters(stub)).toEqual([]);

    // The tenth failure in a row: the rows move aside, kept, and the outbox is empty.
    await runInDurableObject(stub, (gate) => gate.flushOutbox().catch(() => undefined));
    expect(attempts()).toBe(DEAD_AFTER);
    expect(await outboxRows(stub)).toEqual([]);
    const dead = await deadLetters(stub);
    expect(dead.map((d) => d.attempts)).toEqual([DEAD_AFTER, DEAD_AFTER]);
    expect(dead.map((d) => d.op)).toEqual([
      expect.objectContaining({
        op: "approval",
        approval: expect.objectContaining({ id: approval.id, state: "allowed" }),
      }),
      expect.objectContaining({ op: "audit", action: "approval.allowed", subject: approval.id }),
    ]);
    // Nothing retries a dead letter: D1 keeps the last state it was told.
    await runInDurableObject(stub, (gate) => gate.flushOutbox());
    expect(attempts()).toBe(DEAD_AFTER);
    expect(await d1State(approval.id)).toBe("pending");

    // D1 is back: new rows are not stuck behind the dead ones.
    await runInDurableObject(stub, (gate) => vi.mocked(gate.outbox.deliver).mockRestore());
    await agent.ask(2, permissionParams(sessionId));
    const [next] = await pendingApprovals(owner, sessionId);
    expect(next?.id).not.toBe(approval.id);
    // The new request's ladder may still be climbing (its audit rows follow when its steps end).
    await vi.waitFor(async () => expect(await outboxRows(stub)).toEqual([]));
    expect(await deadLetters(stub)).toHaveLength(2);
  });

  it("shows dead letters on the dashboard: the session's count, live and in GET /v1/sessions", async () => {
    const { owner, sessionId, approval } = await askOnce();
    const feed = await openLive(owner);
    const stub = gateStub(owner.teamId, sessionId);
    await breakOutbox(stub);
    const sessionsNow = async () =>
      json<{ sessions: Array<{ sessionId: string; deadLetters?: number }>; deadLettered: unknown[] }>(
        await api("/v1/sessions?state=connected", { cookie: owner.cookie }),
      );
    expect((await sessionsNow()).deadLettered).toEqual([]);

    expect((await decide(owner, approval, "allow")).status).toBe(200);
    await vi.waitFor(async () => expect((await outboxRows(stub)).map((r) => r.attempts)).toEqual([1, 1]));
    for (let i = 1; i < DEAD_AFTER; i++) {
      await runInDurableObject(stub, (gate) => gate.flushOutbox().catch(() => undefined));
    }
    expect(await deadLetters(stub)).toHaveLength(2);

    // The gate reports its count to the hub; the live feed shows it at once.
    const live = await feed.next(
      (f) => f.type === "session" && (f.session as { deadLetters?: number }).deadLetters !== undefined,
    );
    expect(live.session).toMatchObject({ sessionId, deadLetters: 2 });
    const listed = await sessionsNow();
    expect(listed.deadLettered).toEqual([{ sessionId, deadLetters: 2, at: expect.any(Number) }]);
    expect(listed.sessions.find((s) => s.sessionId === sessionId)?.deadLetters).toBe(2);
    const detail = await json<{ deadLetters?: number }>(
      await api(`/v1/sessions/${sessionId}`, { cookie: owner.cookie }),
    );
    expect(detail.deadLetters).toBe(2);
    // Another team sees none of it.
    const other = await signUp("Eve");
    const theirs = await json<{ deadLettered: unknown[] }>(await api("/v1/sessions", { cookie: other.cookie }));
    expect(theirs.deadLettered).toEqual([]);
    feed.ws.close();
  });

  it("counts failures across restarts, and the alarm's retry delivers once D1 is back", async () => {
    const { owner, sessionId, approval } = await askOnce();
    let stub = gateStub(owner.teamId, sessionId);
    await breakOutbox(stub);
    expect((await decide(owner, approval, "deny")).status).toBe(200);
    await vi.waitFor(async () => expect((await outboxRows(stub)).map((r) => r.attempts)).toEqual([1, 1]));

    // A new instance (no broken D1 this time) keeps the count and waits for the alarm to retry.
    await abortAllDurableObjects();
    stub = gateStub(owner.teamId, sessionId);
    expect((await outboxRows(stub)).map((r) => r.attempts)).toEqual([1, 1]);
    expect(await d1State(approval.id)).toBe("pending");
    await flush(owner.teamId, sessionId); // what the alarm's retry does
    expect(await outboxRows(stub)).toEqual([]);
    expect(await d1State(approval.id)).toBe("denied");
    expect(await deadLetters(stub)).toEqual([]);
  });

  it("moves no alarm for a flush that lands; a failed one brings the alarm to the backoff's first retry", async () => {
    const { owner, agent, sessionId, approval } = await askOnce();
    const stub = gateStub(owner.teamId, sessionId);
    const alarmOf = () => runInDurableObject(stub, (_, state) => state.storage.getAlarm());
    // The held request's heartbeat check, set by the ask.
    const held = await alarmOf();
    expect(held).toBeGreaterThan(Date.now() + OUTBOX_RETRY_MS);

    // The decision flushes at once: its alarm stays where it was (no storage write, no wake for nothing).
    expect((await decide(owner, approval, "allow")).status).toBe(200);
    await vi.waitFor(async () => expect(await outboxRows(stub)).toEqual([]));
    expect(await alarmOf()).toBe(held);

    // A decision whose flush fails is retried by the alarm OUTBOX_RETRY_MS after the failure, not at the heartbeat's.
    await agent.ask(2, permissionParams(sessionId));
    const [second] = await pendingApprovals(owner, sessionId);
    if (!second) throw new Error("the second request is not pending");
    const heartbeat = await alarmOf();
    await breakOutbox(stub);
    expect((await decide(owner, second, "deny")).status).toBe(200);
    await vi.waitFor(async () => expect((await outboxRows(stub)).map((r) => r.attempts)).toEqual([1, 1]));
    const retry = await alarmOf();
    expect(retry).toBeLessThanOrEqual(Date.now() + OUTBOX_RETRY_MS);
    expect(retry).toBeLessThan(heartbeat ?? 0);
  });

  it("deletes acknowledged rows with the next change; a restarted gate sends its last ones again, nothing twice", async () => {
    const { owner, agent, sessionId, approval } = await askOnce();
    const stub = gateStub(owner.teamId, sessionId);
    expect((await decide(owner, approval, "allow")).status).toBe(200);
    // The decision's own flush (in the background) lands...
    await vi.waitFor(async () => expect(await outboxRows(stub)).toEqual([]));
    // ...acknowledged, and still stored: no commit of their own.
    expect(await storedRowSubjects(stub)).toContain(approval.id);

    // The next change (the agent's next ask) deletes them in its own commit.
    await agent.ask(2, permissionParams(sessionId));
    await vi.waitFor(async () => expect(await storedRowSubjects(stub)).not.toContain(approval.id));
    const [second] = await pendingApprovals(owner, sessionId);
    if (!second) throw new Error("the second request is not pending");

    // A restart forgets what was acknowledged: the rows go again, and D1 has each event once.
    expect((await decide(owner, second, "deny")).status).toBe(200);
    await vi.waitFor(async () => expect(await outboxRows(stub)).toEqual([]));
    expect(await storedRowSubjects(stub)).toContain(second.id);
    await abortAllDurableObjects();
    await flush(owner.teamId, sessionId);
    expect(await storedRowSubjects(gateStub(owner.teamId, sessionId))).toEqual([]);
    const events = await env.DB.prepare("SELECT action FROM audit_log WHERE subject = ? ORDER BY seq")
      .bind(second.id)
      .all<{ action: string }>();
    const once = events.results.map((e) => e.action).filter((a) => a !== "approval.escalated");
    expect(once).toEqual(["approval.requested", "approval.denied"]);
    expect(await d1State(second.id)).toBe("denied");
  });
});
