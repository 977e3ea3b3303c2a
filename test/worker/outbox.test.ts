/**
 * The gate's outbox to D1 when D1 or the hub fails: retries back off by a persisted retry time
 * (however often the alarm wakes), an outage of any length sets nothing aside, only a row that
 * fails alone while the rows behind it land becomes a dead letter, and dead letters replay after
 * the next flush that lands (or on demand). Faults come as production meets them: a D1 trigger
 * refusing writes, a hub whose `gateReport` throws, alarms run at their time on a moved clock.
 */
import { abortAllDurableObjects, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { OutboxOp } from "../../worker/db";
import { DEAD_LETTER_KEEP_MS, OUTBOX_RETRY_MS } from "../../worker/gate/rules";
import { DEFAULT_POLICY } from "../../worker/policy";
import { fakePushService } from "./fake-push";
import {
  api,
  askOnce,
  connectAgent,
  createKey,
  decide,
  flush,
  gateStub,
  hubStub,
  json,
  type Member,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import {
  alarmOf,
  backoffOf,
  d1State,
  deadLetters,
  hubThrows,
  outboxRows,
  refuseApprovalRow,
  refuseSessionDisconnect,
  refuseSessionStop,
  refuseTeamWrites,
  runAlarmsFor,
  simulatedClock,
} from "./outbox-faults";
import { addMember, openLive, stepUpFor, withPasskey } from "./team-helpers";

type Stub = ReturnType<typeof gateStub>;
const MINUTE = 60_000;

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

/** Each approval the gate holds, with its state there. */
const gateStates = (stub: Stub) =>
  runInDurableObject(stub, (_, state) =>
    Object.fromEntries(
      state.storage.sql
        .exec<{ id: string; state: string }>("SELECT id, state FROM approvals")
        .toArray()
        .map((r) => [r.id, r.state]),
    ),
  );

/** Each approval the team's hub knows, with its state there (what its dashboards show). */
const hubStates = (teamId: string) =>
  runInDurableObject(hubStub(teamId), (_, state) =>
    Object.fromEntries(
      state.storage.sql
        .exec<{ id: string; state: string }>("SELECT id, state FROM approvals")
        .toArray()
        .map((r) => [r.id, r.state]),
    ),
  );

const auditActions = async (subject: string) =>
  (
    await env.DB.prepare("SELECT action FROM audit_log WHERE subject = ? ORDER BY seq")
      .bind(subject)
      .all<{ action: string }>()
  ).results
    .map((r) => r.action)
    .filter((a) => a !== "approval.escalated");

const verify = async (m: Member) => json<{ ok: boolean }>(await api("/v1/audit/verify", { cookie: m.cookie }));

const replay = (m: Member, sessionId: string) =>
  api(`/v1/sessions/${encodeURIComponent(sessionId)}/replay`, { method: "POST", cookie: m.cookie });

describe("the gate's outbox through an outage", () => {
  it.each([
    ["D1 refuses the team's writes", (teamId: string) => refuseTeamWrites(teamId)],
    ["the hub's gateReport throws", async () => hubThrows()],
  ])(
    "loses no decision to a 20-minute outage (%s): D1, the audit chain and the hub agree after it, nothing dead-lettered",
    async (_, fault) => {
      const member = await signUp();
      // Requests outlive the outage, so the held one keeps the alarm waking for its heartbeat check.
      const policy = JSON.stringify({ ...DEFAULT_POLICY, lifetimeMs: 60 * MINUTE });
      expect((await api("/v1/policy", { method: "PUT", cookie: member.cookie, body: policy })).status).toBe(200);
      const { owner, agent, keyId, sessionId, approval } = await askOnce(member);
      const stub = gateStub(owner.teamId, sessionId);
      const feed = await openLive(owner);
      // A second request stays held on the socket (its agent keeps talking): the alarm wakes every 15 s for it.
      await agent.ask(2, permissionParams(sessionId));
      const second = (await pendingApprovals(owner, sessionId)).find((a) => a.id !== approval.id);
      if (!second) throw new Error("the second request is not pending");
      const clock = simulatedClock();
      try {
        const lift = await fault(owner.teamId);
        try {
          expect((await decide(owner, approval, "allow")).status).toBe(200);
          expect(await agent.next()).toMatchObject({ id: 1, result: { outcome: { outcome: "selected" } } });
          await vi.waitFor(async () => expect(await backoffOf(stub)).toMatchObject({ failures: 1 }));

          const woke = await runAlarmsFor(stub, clock, 20 * MINUTE, () => agent.barrier());
          // Woken far more often than the backoff retries: every heartbeat check, and the ladder's steps.
          expect(woke).toBeGreaterThan(60);
          const backoff = await backoffOf(stub);
          // Retried only on the backoff's schedule: 5 s doubling to 5 min is about 10 tries in 20 minutes.
          expect(backoff?.failures).toBeLessThanOrEqual(11);
          expect(await deadLetters(stub)).toEqual([]);
          expect(await d1State(approval.id)).toBe("pending");
        } finally {
          await lift();
        }

        // Recovery: the alarm at its retry time delivers everything.
        for (let i = 0; i < 5 && (await backoffOf(stub)) !== null; i++) {
          clock.advanceTo((await alarmOf(stub)) ?? Date.now());
          await runDurableObjectAlarm(stub);
        }
        expect(await backoffOf(stub)).toBeNull();
        expect(await outboxRows(stub)).toEqual([]);
        expect(await deadLetters(stub)).toEqual([]);

        const states = await gateStates(stub);
        expect(states[approval.id]).toBe("allowed");
        expect(states[second.id]).toBe("pending");
        expect((await decide(owner, second, "deny")).status).toBe(200);
        await vi.waitFor(async () => expect(await outboxRows(stub)).toEqual([]));
        states[second.id] = "denied";
        for (const [id, state] of Object.entries(states)) {
          expect(await d1State(id)).toBe(state);
          expect(await auditActions(id)).toEqual(["approval.requested", `approval.${state}`]);
        }
        expect(await hubStates(owner.teamId)).toMatchObject(states);
        expect(await hubStub(owner.teamId).quotaPending(keyId)).toBe(0);
        await feed.next((f) => f.type === "resolved" && (f.approval as { id: string }).id === approval.id);
      } finally {
        clock.restore();
      }
      expect(await verify(owner)).toMatchObject({ ok: true });
      feed.ws.close();
    },
    // Some eighty alarms, each with the agent's heartbeat, run one after another.
    60_000,
  );

  it("retries on the persisted time across a restart, and the alarm's retry delivers once D1 is back", async () => {
    const { owner, sessionId, approval } = await askOnce();
    let stub = gateStub(owner.teamId, sessionId);
    const lift = await refuseTeamWrites(owner.teamId);
    const clock = simulatedClock();
    try {
      expect((await decide(owner, approval, "deny")).status).toBe(200);
      await vi.waitFor(async () => expect(await backoffOf(stub)).toMatchObject({ failures: 1 }));
      const { retryAt } = (await backoffOf(stub)) as { retryAt: number };
      await lift();

      // A new instance keeps the streak: an alarm before its time flushes nothing.
      await abortAllDurableObjects();
      stub = gateStub(owner.teamId, sessionId);
      await runInDurableObject(stub, (_, state) => state.storage.setAlarm(Date.now() + 1_000));
      await runDurableObjectAlarm(stub);
      expect(await d1State(approval.id)).toBe("pending");
      expect(await alarmOf(stub)).toBe(retryAt);

      clock.advanceTo(retryAt);
      await runDurableObjectAlarm(stub);
      expect(await d1State(approval.id)).toBe("denied");
      expect(await backoffOf(stub)).toBeNull();
      expect(await deadLetters(stub)).toEqual([]);
    } finally {
      clock.restore();
      await lift();
    }
  });

  it("moves no alarm for a flush that lands; a failed one brings the alarm to the backoff's first retry", async () => {
    const { owner, agent, sessionId, approval } = await askOnce();
    const stub = gateStub(owner.teamId, sessionId);
    // The held request's heartbeat check, set by the ask.
    const held = await alarmOf(stub);
    expect(held).toBeGreaterThan(Date.now() + OUTBOX_RETRY_MS);

    // The decision flushes at once: its alarm stays where it was (no storage write, no wake for nothing).
    expect((await decide(owner, approval, "allow")).status).toBe(200);
    await vi.waitFor(async () => expect(await outboxRows(stub)).toEqual([]));
    expect(await alarmOf(stub)).toBe(held);

    // A decision whose flush fails is retried by the alarm OUTBOX_RETRY_MS after the failure, not at the heartbeat's.
    await agent.ask(2, permissionParams(sessionId));
    const [second] = await pendingApprovals(owner, sessionId);
    if (!second) throw new Error("the second request is not pending");
    const heartbeat = await alarmOf(stub);
    const lift = await refuseTeamWrites(owner.teamId);
    try {
      expect((await decide(owner, second, "deny")).status).toBe(200);
      await vi.waitFor(async () => expect(await backoffOf(stub)).toMatchObject({ failures: 1 }));
      const retry = await alarmOf(stub);
      expect(retry).toBe((await backoffOf(stub))?.retryAt);
      expect(retry).toBeLessThanOrEqual(Date.now() + OUTBOX_RETRY_MS);
      expect(retry).toBeLessThan(heartbeat ?? 0);
    } finally {
      await lift();
    }
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
    expect(await auditActions(second.id)).toEqual(["approval.requested", "approval.denied"]);
    expect(await d1State(second.id)).toBe("denied");
  });
});

describe("dead letters: a row that fails alone", () => {
  it("is set aside while the rows behind it land, shown on the dashboard, and replayed after the next flush that lands", async () => {
    const { owner, agent, sessionId, approval } = await askOnce();
    const stub = gateStub(owner.teamId, sessionId);
    const feed = await openLive(owner);
    const clock = simulatedClock();
    try {
      const lift = await refuseApprovalRow(approval.id);
      try {
        expect((await decide(owner, approval, "allow")).status).toBe(200);
        // Only the refused row went aside; its audit event, behind it, landed.
        await vi.waitFor(async () => expect(await deadLetters(stub)).toHaveLength(1));
        expect(await deadLetters(stub)).toEqual([
          expect.objectContaining({ op: "approval", approval: expect.objectContaining({ id: approval.id }) }),
        ]);
        await vi.waitFor(async () => expect(await outboxRows(stub)).toEqual([]));
        expect(await auditActions(approval.id)).toEqual(["approval.requested", "approval.allowed"]);
        expect(await backoffOf(stub)).toBeNull();
        expect(await d1State(approval.id)).toBe("pending");

        // The session reports its count: live, and in GET /v1/sessions.
        const live = await feed.next(
          (f) => f.type === "session" && (f.session as { deadLetters?: number }).deadLetters === 1,
        );
        expect(live.session).toMatchObject({ sessionId });
        const listed = await json<{ deadLettered: unknown[] }>(await api("/v1/sessions", { cookie: owner.cookie }));
        expect(listed.deadLettered).toEqual([{ sessionId, deadLetters: 1, at: expect.any(Number) }]);
        // Rows behind it are not held up: the next request's rows land.
        await agent.ask(2, permissionParams(sessionId));
        await vi.waitFor(async () => expect(await outboxRows(stub)).toEqual([]));
      } finally {
        await lift();
      }

      // The next flush that lands once the replay is due delivers the dead letter.
      clock.advanceBy(10 * MINUTE);
      await agent.ask(3, permissionParams(sessionId));
      await vi.waitFor(async () => expect(await deadLetters(stub)).toEqual([]));
      expect(await d1State(approval.id)).toBe("allowed");
      await feed.next((f) => f.type === "session" && (f.session as { deadLetters?: number }).deadLetters === undefined);
      const after = await json<{ deadLettered: unknown[] }>(await api("/v1/sessions", { cookie: owner.cookie }));
      expect(after.deadLettered).toEqual([]);
    } finally {
      clock.restore();
      feed.ws.close();
    }
    expect(await verify(owner)).toMatchObject({ ok: true });
  });

  it("replays on demand: POST /v1/sessions/:id/replay, admins only, the team's sessions only", async () => {
    const { owner, sessionId, approval } = await askOnce();
    const stub = gateStub(owner.teamId, sessionId);
    const lift = await refuseApprovalRow(approval.id);
    try {
      expect((await decide(owner, approval, "deny")).status).toBe(200);
      await vi.waitFor(async () => expect(await deadLetters(stub)).toHaveLength(1));
      // Still refused: the replay leaves it.
      expect(await json(await replay(owner, sessionId))).toEqual({ replayed: 0, deadLetters: 1 });
    } finally {
      await lift();
    }
    const viewer = await addMember(owner, "viewer", "Vic");
    expect((await replay(viewer, sessionId)).status).toBe(403);
    const other = await signUp("Eve");
    expect((await replay(other, sessionId)).status).toBe(404);
    expect(await deadLetters(stub)).toHaveLength(1);

    const replayed = await replay(owner, sessionId);
    expect(replayed.status).toBe(200);
    expect(await json(replayed)).toEqual({ replayed: 1, deadLetters: 0 });
    expect(await d1State(approval.id)).toBe("denied");
    expect(await deadLetters(stub)).toEqual([]);
  });
});

describe("a session's state replayed late", () => {
  it("does not overwrite a newer one: a disconnect set aside behind a reconnect leaves the session connected", async () => {
    const { owner, key, sessionId, agent } = await askOnce();
    const stub = gateStub(owner.teamId, sessionId);
    const clock = simulatedClock();
    const lift = await refuseSessionDisconnect(sessionId);
    let reconnectedAt: number;
    try {
      // The socket drops: its request's end lands, the session's disconnect alone is refused.
      agent.ws.close();
      await vi.waitFor(
        async () => expect((await outboxRows(stub)).map((r) => JSON.parse(r.op).connected)).toEqual([false]),
        { timeout: 5_000, interval: 20 },
      );
      // The agent is back before the retry: the disconnect is set aside while the reconnect behind it lands.
      await connectAgent(key, sessionId);
      const queued = (await outboxRows(stub)).map((r) => JSON.parse(r.op) as { connected: boolean; at: number });
      expect(queued.map((o) => o.connected)).toEqual([false, true]);
      reconnectedAt = (queued[1] as { at: number }).at;
      await runAlarmsFor(stub, clock, MINUTE);
      expect(await outboxRows(stub)).toEqual([]);
    } finally {
      await lift();
      clock.restore();
    }
    // Whatever is still set aside is replayed now: the older state changes nothing.
    expect((await replay(owner, sessionId)).status).toBe(200);
    expect(await deadLetters(stub)).toEqual([]);
    const row = await env.DB.prepare("SELECT disconnected_at, session_at FROM agent_sessions WHERE session_id = ?")
      .bind(sessionId)
      .first();
    expect(row).toEqual({ disconnected_at: null, session_at: reconnectedAt });
  });
});

describe("a session's stop replayed late", () => {
  it("does not undo a newer resume: the stop set aside, then replayed after the resume landed, leaves it running", async () => {
    const { owner, sessionId } = await askOnce();
    const stub = gateStub(owner.teamId, sessionId);
    const post = (action: "stop" | "resume") =>
      api(`/v1/sessions/${sessionId}/${action}`, { method: "POST", cookie: owner.cookie, body: "{}" });
    const lift = await refuseSessionStop(sessionId);
    try {
      // The stop's row alone is refused; its audit event and the request it denied land behind it.
      expect((await post("stop")).status).toBe(200);
      await vi.waitFor(async () =>
        expect(await deadLetters(stub)).toEqual([expect.objectContaining({ op: "session_stop" })]),
      );
      expect((await post("resume")).status).toBe(200);
      await vi.waitFor(async () => expect(await outboxRows(stub)).toEqual([]));
    } finally {
      await lift();
    }
    expect(await json(await replay(owner, sessionId))).toEqual({ replayed: 1, deadLetters: 0 });
    const row = await env.DB.prepare("SELECT stopped FROM agent_sessions WHERE session_id = ?").bind(sessionId).first();
    expect(row).toEqual({ stopped: null });
  });
});

describe("dead letters are bounded", () => {
  it("drops a dead letter that keeps failing after 30 days, on the gate's alarm, and reports the count", async () => {
    const { owner, sessionId, approval } = await askOnce();
    const stub = gateStub(owner.teamId, sessionId);
    const lift = await refuseApprovalRow(approval.id);
    const clock = simulatedClock();
    try {
      expect((await decide(owner, approval, "allow")).status).toBe(200);
      await vi.waitFor(async () => expect(await deadLetters(stub)).toHaveLength(1));
      // Its replays keep failing: the alarm comes back for them, later each time, and keeps it.
      const firstReplay = (await alarmOf(stub)) ?? 0;
      clock.advanceTo(firstReplay);
      await runDurableObjectAlarm(stub);
      expect(await deadLetters(stub)).toHaveLength(1);
      expect(await alarmOf(stub)).toBeGreaterThan(firstReplay);

      clock.advanceBy(DEAD_LETTER_KEEP_MS + MINUTE);
      await runInDurableObject(stub, (_, state) => state.storage.setAlarm(Date.now()));
      await runDurableObjectAlarm(stub);
      expect(await deadLetters(stub)).toEqual([]);
      // (The owner's web session is over by now: the hub is asked directly.)
      await vi.waitFor(async () => expect(await hubStub(owner.teamId).deadLettered(owner.teamId)).toEqual([]));
    } finally {
      clock.restore();
      await lift();
    }
  });
});

describe("hub news at least once", () => {
  it("a lost `resolved` is repaired by the next flush: the card closes, the quota slot frees, once", async () => {
    const { owner, agent, keyId, sessionId, approval } = await askOnce();
    const stub = gateStub(owner.teamId, sessionId);
    const feed = await openLive(owner);
    const hub = hubStub(owner.teamId);
    expect(await hub.quotaPending(keyId)).toBe(1);
    const clock = simulatedClock();
    try {
      const restore = hubThrows();
      try {
        expect((await decide(owner, approval, "allow")).status).toBe(200);
        await vi.waitFor(async () => expect(await backoffOf(stub)).toMatchObject({ failures: 1 }));
      } finally {
        restore();
      }
      // The report carrying the news failed: the hub still shows the request and holds its slot.
      expect((await hubStates(owner.teamId))[approval.id]).toBe("pending");
      expect(await hub.quotaPending(keyId)).toBe(1);

      // The alarm's retry carries the rows (never the news): the hub takes the approval row as the news.
      clock.advanceTo((await backoffOf(stub))?.retryAt ?? 0);
      await runDurableObjectAlarm(stub);
      await feed.next((f) => f.type === "resolved" && (f.approval as { id: string }).id === approval.id);
      expect((await hubStates(owner.teamId))[approval.id]).toBe("allowed");
      expect(await hub.quotaPending(keyId)).toBe(0);
    } finally {
      clock.restore();
    }
    // News and row both arriving (every decision without a fault) make one `resolved`, one release.
    await agent.ask(2, permissionParams(sessionId));
    const [second] = await pendingApprovals(owner, sessionId);
    if (!second) throw new Error("the second request is not pending");
    expect(await hub.quotaPending(keyId)).toBe(1);
    expect((await decide(owner, second, "deny")).status).toBe(200);
    await vi.waitFor(async () => expect(await outboxRows(stub)).toEqual([]));
    await feed.next((f) => f.type === "resolved" && (f.approval as { id: string }).id === second.id);
    expect(await hub.quotaPending(keyId)).toBe(0);
    const resolvedOf = (id: string) =>
      feed.frames.filter((f) => f.type === "resolved" && (f.approval as { id: string }).id === id);
    expect(resolvedOf(approval.id)).toHaveLength(1);
    expect(resolvedOf(second.id)).toHaveLength(1);
    feed.ws.close();
  });

  it("a lost quorum `updated` (1 of 2) is repaired by the next flush: dashboards show the first allow, once", async () => {
    const owner = await withPasskey(await signUp("Ada"));
    const policy = await api("/v1/policy", {
      method: "PUT",
      cookie: owner.cookie,
      body: JSON.stringify({ highRiskQuorum: 2 }),
    });
    expect(policy.status).toBe(200);
    const { key } = await createKey(owner);
    const sessionId = unique("quorum-news");
    const agent = await connectAgent(key, sessionId);
    const forcePush = (toolCallId: string) =>
      permissionParams(sessionId, {
        toolCall: {
          toolCallId,
          title: "git push --force origin main",
          kind: "execute",
          rawInput: { command: "git push --force origin main" },
        },
      });
    await agent.ask(1, forcePush("push-1"));
    const [approval] = await pendingApprovals(owner, sessionId);
    if (!approval) throw new Error("the high-risk request is not pending");
    const stub = gateStub(owner.teamId, sessionId);
    const feed = await openLive(owner);
    const allowOf = async (a: typeof approval) =>
      api(`/v1/approvals/${a.id}/decision`, {
        method: "POST",
        cookie: owner.cookie,
        body: JSON.stringify({
          optionId: "allow",
          requestHash: a.requestHash,
          stepUp: (await stepUpFor(owner, a)).assertion,
        }),
      });
    const hubQuorum = (id: string) =>
      runInDurableObject(hubStub(owner.teamId), (_, state) => {
        const row = state.storage.sql.exec<{ record: string }>("SELECT record FROM approvals WHERE id = ?", id).one();
        return (JSON.parse(row.record) as typeof approval).quorum?.allowedBy.map((p) => p.userId);
      });
    const oneOfTwo = (id: string) => (f: Record<string, unknown>) =>
      f.type === "approval" &&
      (f.approval as typeof approval).id === id &&
      (f.approval as typeof approval).quorum?.allowedBy.length === 1;

    const clock = simulatedClock();
    try {
      const restore = hubThrows();
      try {
        const first = await allowOf(approval);
        expect(first.status).toBe(200);
        expect(await json(first)).toMatchObject({ state: "pending", quorum: { required: 2 } });
        await vi.waitFor(async () => expect(await backoffOf(stub)).toMatchObject({ failures: 1 }));
      } finally {
        restore();
      }
      // The report carrying the `updated` news failed: dashboards still show no allow.
      expect(await hubQuorum(approval.id)).toEqual([]);

      // The alarm's retry carries the rows (never the news): the hub takes the pending row with its allow as the news.
      clock.advanceTo((await backoffOf(stub))?.retryAt ?? 0);
      await runDurableObjectAlarm(stub);
      await feed.next(oneOfTwo(approval.id));
      expect(await hubQuorum(approval.id)).toEqual([owner.userId]);
      expect((await hubStates(owner.teamId))[approval.id]).toBe("pending");
    } finally {
      clock.restore();
    }
    expect(feed.frames.filter(oneOfTwo(approval.id))).toHaveLength(1);
    await agent.barrier();
    expect(agent.pending()).toBe(0); // nothing reached the agent: it is still 1 of 2
    feed.ws.close();
  });

  it("a lost `created` is harmless: the card was shown at admission, the ladder pushes, the retried row lands", async () => {
    const fake = fakePushService();
    const owner = await signUp();
    const phone = await fake.addPhone(owner);
    const feed = await openLive(owner);
    const { key } = await createKey(owner);
    const sessionId = unique("lost-created");
    const restore = hubThrows();
    let approvalId: string;
    try {
      const agent = await connectAgent(key, sessionId);
      await agent.ask(1, permissionParams(sessionId));
      // Every report to the hub (its `created` news, the session's state, the rows) is lost, yet:
      // the dashboards show the card (shown when the hub admitted it) ...
      const card = await feed.next((f) => f.type === "approval");
      approvalId = (card.approval as { id: string }).id;
      // ... and the phone is pushed (the gate's ladder asks the hub by `escalate`, retried until acknowledged).
      await fake.untilPushes(1);
      expect(fake.to(phone).map((p) => (p as { approvalId?: string }).approvalId)).toContain(approvalId);
      expect((await hubStates(owner.teamId))[approvalId]).toBe("pending");
    } finally {
      restore();
    }
    // The hub back, the outbox's retry lands the row: D1 agrees, nothing set aside.
    const stub = gateStub(owner.teamId, sessionId);
    await flush(owner.teamId, sessionId);
    expect(await outboxRows(stub)).toEqual([]);
    expect(await d1State(approvalId)).toBe("pending");
    feed.ws.close();
  });
});
