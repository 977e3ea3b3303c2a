/**
 * The gate in a bad minute: a decision raced with a dying socket, statements that throw in the
 * gate's own SQLite (a trigger, as a corrupt or full disk would), a failing alarm, a restart
 * whose clean-up throws, a socket flooding frames while the hub is slow, and the bound on
 * resolved rows. Each fault is injected the way production meets it: the real alarm
 * (`runDurableObjectAlarm`), a real socket closed, a trigger in the gate's SQLite.
 */
import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { SILENT_AFTER_MS } from "../../worker/gate/sockets";
import { REVOKED_KEY_MEMORY_MS } from "../../worker/gate/store";
import { TeamHub } from "../../worker/hub/team-hub";
import {
  api,
  askOnce,
  connectAgent,
  createKey,
  decide,
  gateStub,
  json,
  type Member,
  pendingApprovals,
  permissionParams,
} from "./helpers";
import { simulatedClock } from "./outbox-faults";

type Stub = ReturnType<typeof gateStub>;

afterEach(() => {
  vi.restoreAllMocks();
});

/** Runs SQL in the gate's own SQLite (a trigger, a backdated row). */
const gateSql = (stub: Stub, sql: string, ...bindings: SqlStorageValue[]) =>
  runInDurableObject(stub, (_, state) => void state.storage.sql.exec(sql, ...bindings));

const gateRows = <T extends Record<string, SqlStorageValue>>(stub: Stub, sql: string, ...bindings: SqlStorageValue[]) =>
  runInDurableObject(stub, (_, state) => state.storage.sql.exec<T>(sql, ...bindings).toArray());

/** A trigger that makes every statement of `event` on `table` matching `when` abort, as a failing disk would. */
const failing = (stub: Stub, name: string, event: string, table: string, when = "1") =>
  gateSql(
    stub,
    `CREATE TRIGGER ${name} BEFORE ${event} ON ${table} WHEN ${when} BEGIN SELECT RAISE(ABORT, 'disk says no'); END`,
  );

const read = async (owner: Member, id: string) =>
  json<Approval>(await api(`/v1/approvals/${id}`, { cookie: owner.cookie }));

describe("no allow is recorded that the agent cannot receive", () => {
  it("a decision in the same turn as the socket's close answers 410; the record says denied/agent_disconnected", async () => {
    const { owner, sessionId, approval } = await askOnce();
    const stub = gateStub(owner.teamId, sessionId);
    // The socket closes (the runtime has not run its close handler yet) and a decision comes in the same turn.
    const result = await runInDurableObject(stub, (gate, state) => {
      for (const ws of state.getWebSockets()) ws.close(1001, "going away");
      return gate.decide({
        approvalId: approval.id,
        teamId: owner.teamId,
        userId: owner.userId,
        name: "Ada",
        role: "owner",
        device: "phone",
        optionId: "allow",
        requestHash: approval.requestHash,
      });
    });
    expect(result).toMatchObject({
      ok: false,
      error: "already_resolved",
      approval: { state: "denied", reason: "agent_disconnected" },
    });
    expect(await read(owner, approval.id)).toMatchObject({ state: "denied", reason: "agent_disconnected" });
    // Over HTTP the same decision is the 410 with that resolution.
    const again = await decide(owner, approval, "allow");
    expect(again.status).toBe(410);
    expect(await json(again)).toMatchObject({
      error: "already_resolved",
      approval: { state: "denied", reason: "agent_disconnected" },
    });
  });

  it("a decision after two heartbeats of silence (no frame, no ping) answers 410 and the agent is told no", async () => {
    const { owner, agent, sessionId, approval } = await askOnce();
    const stub = gateStub(owner.teamId, sessionId);
    // The agent's last frame was longer ago than two heartbeats, and it sent no ping since.
    await runInDurableObject(stub, (_, state) => {
      for (const ws of state.getWebSockets()) {
        const identity = ws.deserializeAttachment() as { lastMessageAt: number; connectedAt: number };
        const then = Date.now() - SILENT_AFTER_MS - 1_000;
        ws.serializeAttachment({ ...identity, lastMessageAt: then, connectedAt: then });
      }
    });
    const late = await decide(owner, approval, "allow");
    expect(late.status).toBe(410);
    expect(await json(late)).toMatchObject({ approval: { state: "denied", reason: "agent_disconnected" } });
    expect(await read(owner, approval.id)).toMatchObject({ state: "denied", reason: "agent_disconnected" });
    // Had the socket been alive after all, it hears the fail-closed answer, never the allow.
    expect(await agent.next()).toMatchObject({ id: 1, result: { outcome: { outcome: "selected", optionId: "deny" } } });
  });

  it("a socket heard from within two heartbeats is decided as usual", async () => {
    const { owner, agent, sessionId, approval } = await askOnce();
    await runInDurableObject(gateStub(owner.teamId, sessionId), (_, state) => {
      for (const ws of state.getWebSockets()) {
        const identity = ws.deserializeAttachment() as { lastMessageAt: number };
        ws.serializeAttachment({ ...identity, lastMessageAt: Date.now() - SILENT_AFTER_MS + 5_000 });
      }
    });
    expect((await decide(owner, approval, "allow")).status).toBe(200);
    expect(await agent.next()).toMatchObject({
      id: 1,
      result: { outcome: { outcome: "selected", optionId: "allow" } },
    });
  });
});

describe("open and resolve are one storage transaction each", () => {
  it("a hold whose audit event cannot be stored holds nothing: one refusal, no pending row, the id reusable", async () => {
    const { owner, sessionId, agent } = await askOnce();
    const stub = gateStub(owner.teamId, sessionId);
    await failing(stub, "no_requested", "INSERT", "outbox", "json_extract(NEW.op, '$.action') = 'approval.requested'");
    await agent.ask(7, permissionParams(sessionId));
    expect(await agent.next()).toMatchObject({
      id: 7,
      error: { message: expect.stringContaining("nothing was held") },
    });
    // Nothing of it was kept: no pending row that a close or an expiry would answer a second time.
    const rows = await gateRows<{ n: number }>(stub, "SELECT COUNT(*) AS n FROM approvals WHERE rpc_id = '7'");
    expect(rows[0]?.n).toBe(0);
    await gateSql(stub, "DROP TRIGGER no_requested");
    // The same id, asked again, is held and answered once.
    await agent.ask(7, permissionParams(sessionId));
    const held = (await pendingApprovals(owner, sessionId)).length;
    expect(held).toBe(2);
  });

  it("a decision whose audit event cannot be stored changes nothing: the agent hears nothing, a retry decides", async () => {
    const { owner, sessionId, agent, approval } = await askOnce();
    const stub = gateStub(owner.teamId, sessionId);
    await failing(stub, "no_allowed", "INSERT", "outbox", "json_extract(NEW.op, '$.action') = 'approval.allowed'");
    expect((await decide(owner, approval, "allow")).status).toBe(500);
    // The claim rolled back with the audit event: still pending, and no answer reached the agent.
    expect(await read(owner, approval.id)).toMatchObject({ state: "pending" });
    await agent.barrier();
    expect(agent.pending()).toBe(0);
    await gateSql(stub, "DROP TRIGGER no_allowed");
    expect((await decide(owner, approval, "allow")).status).toBe(200);
    expect(await agent.next()).toMatchObject({ id: 1, result: { outcome: { optionId: "allow" } } });
  });
});

describe("poison rows are contained", () => {
  it("a row whose resolution throws is quarantined and reported; the rows behind it still expire", async () => {
    const { owner, sessionId, agent, approval: poison } = await askOnce();
    await agent.ask(2, permissionParams(sessionId));
    const behind = (await pendingApprovals(owner, sessionId)).find((a) => a.id !== poison.id) as Approval;
    const stub = gateStub(owner.teamId, sessionId);
    // Both are due; the poison row first.
    await gateSql(stub, "UPDATE approvals SET expires_at = ? WHERE id = ?", Date.now() - 2_000, poison.id);
    await gateSql(stub, "UPDATE approvals SET expires_at = ? WHERE id = ?", Date.now() - 1_000, behind.id);
    await failing(stub, "poison", "UPDATE", "approvals", `OLD.id = '${poison.id}'`);

    expect(await runDurableObjectAlarm(stub)).toBe(true);
    // Both agents' requests are answered no: the poison one fail-closed, the one behind it expired.
    const answers = [await agent.next(), await agent.next()].sort((a, b) => Number(a.id) - Number(b.id));
    expect(answers).toMatchObject([
      { id: 1, result: { outcome: { optionId: "deny" }, _meta: { tapgate: { reason: "invalid" } } } },
      { id: 2, result: { outcome: { optionId: "deny" }, _meta: { tapgate: { reason: "expired" } } } },
    ]);
    expect(await read(owner, behind.id)).toMatchObject({ state: "expired" });
    const quarantined = await gateRows<{ approval_id: string }>(stub, "SELECT approval_id FROM quarantined");
    expect(quarantined).toEqual([{ approval_id: poison.id }]);
    // The alarm does not come back at once for it: nothing else is due before the session's report.
    const alarm = await runInDurableObject(stub, (_, state) => state.storage.getAlarm());
    expect(alarm === null || alarm > Date.now() + 1_000).toBe(true);
    // Reported: the session's count of rows D1 will not get.
    await vi.waitFor(async () => {
      const { sessions } = await json<{ sessions: Array<{ sessionId: string; deadLetters?: number }> }>(
        await api("/v1/sessions", { cookie: owner.cookie }),
      );
      expect(sessions.find((s) => s.sessionId === sessionId)?.deadLetters).toBe(1);
    });
  });

  it("a request set aside answers its agent no, and a human's decision on it 410 already_resolved", async () => {
    const { owner, sessionId, agent, approval } = await askOnce();
    const stub = gateStub(owner.teamId, sessionId);
    await gateSql(stub, "UPDATE approvals SET expires_at = ? WHERE id = ?", Date.now() - 1_000, approval.id);
    await failing(stub, "poison", "UPDATE", "approvals", `OLD.id = '${approval.id}'`);

    expect(await runDurableObjectAlarm(stub)).toBe(true);
    // Never silence: the agent is told no at once, with its own reject option.
    expect(await agent.next()).toMatchObject({
      id: 1,
      result: { outcome: { outcome: "selected", optionId: "deny" }, _meta: { tapgate: { reason: "invalid" } } },
    });
    // A human deciding it now is told it ended without them (not a 500), and nothing is allowed.
    const late = await decide(owner, approval, "allow");
    expect(late.status).toBe(410);
    expect(await json(late)).toMatchObject({
      error: "already_resolved",
      approval: { id: approval.id, state: "denied", reason: "invalid" },
    });
    expect(await read(owner, approval.id)).toMatchObject({ state: "denied", reason: "invalid" });
    await agent.barrier();
    expect(agent.pending()).toBe(0);
    // The index and the team's cards agree: it is no longer pending anywhere.
    expect(await pendingApprovals(owner, sessionId)).toEqual([]);
  });

  it("an alarm that fails backs off, counting failures in storage, and recovers", async () => {
    const { owner, sessionId, approval } = await askOnce();
    let stub = gateStub(owner.teamId, sessionId);
    expect((await decide(owner, approval, "deny")).status).toBe(200);
    // The resolved row is past retention, and its prune fails.
    await gateSql(stub, "UPDATE approvals SET expires_at = 1 WHERE id = ?", approval.id);
    await failing(stub, "no_prune", "DELETE", "approvals");
    await abortAllDurableObjects(); // a fresh instance schedules from storage
    stub = gateStub(owner.teamId, sessionId); // the old stub died with its instance

    const failures = () => gateRows<{ v: string }>(stub, "SELECT v FROM meta WHERE k = 'alarm_failures'");
    const alarm = () => runInDurableObject(stub, (_, state) => state.storage.getAlarm());
    const retryAt = async () =>
      Number((await gateRows<{ v: string }>(stub, "SELECT v FROM meta WHERE k = 'alarm_retry_at'"))[0]?.v);
    // A fresh instance sets its alarm for the overdue prune, and the runtime runs it: it fails once.
    const started = Date.now();
    await runInDurableObject(stub, () => undefined);
    await vi.waitFor(async () => expect(await failures()).toEqual([{ v: "1" }]));
    expect(await alarm()).toBe(await retryAt());
    expect(await retryAt()).toBeGreaterThanOrEqual(started + 5_000);
    // The next failure waits twice as long.
    const before = Date.now();
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await failures()).toEqual([{ v: "2" }]);
    expect(await alarm()).toBeGreaterThanOrEqual(before + 10_000);
    // A change in between does not pull the alarm back before the backoff.
    await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie });
    expect(await alarm()).toBeGreaterThanOrEqual(Date.now() + 5_000);

    await gateSql(stub, "DROP TRIGGER no_prune");
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await failures()).toEqual([{ v: "0" }]);
    expect(await gateRows(stub, "SELECT id FROM approvals WHERE id = ?", approval.id)).toEqual([]);
  });

  it("a restart whose orphan is poison still serves: the orphan is quarantined, new requests are held", async () => {
    const { owner, key, sessionId, approval } = await askOnce();
    let stub = gateStub(owner.teamId, sessionId);
    await failing(stub, "poison", "UPDATE", "approvals", `OLD.id = '${approval.id}'`);
    await abortAllDurableObjects();
    stub = gateStub(owner.teamId, sessionId); // the old stub died with its instance

    const agent = await connectAgent(key, sessionId);
    await agent.ask(1, permissionParams(sessionId));
    const [fresh] = await pendingApprovals(owner, sessionId);
    expect(fresh?.id).not.toBe(approval.id);
    expect((await decide(owner, fresh as Approval, "allow")).status).toBe(200);
    expect(await agent.next()).toMatchObject({ id: 1, result: { outcome: { optionId: "allow" } } });
    expect(await gateRows(stub, "SELECT approval_id FROM quarantined")).toEqual([{ approval_id: approval.id }]);
  });

  it("a restart whose orphan resolution throws outright (nowhere to set it aside) still serves", async () => {
    const { owner, key, sessionId, approval } = await askOnce();
    let stub = gateStub(owner.teamId, sessionId);
    await failing(stub, "poison", "UPDATE", "approvals", `OLD.id = '${approval.id}'`);
    await failing(stub, "no_quarantine", "INSERT", "quarantined");
    await abortAllDurableObjects();
    stub = gateStub(owner.teamId, sessionId); // the old stub died with its instance

    const agent = await connectAgent(key, sessionId);
    await agent.ask(1, permissionParams(sessionId));
    const fresh = (await pendingApprovals(owner, sessionId)).find((a) => a.id !== approval.id) as Approval;
    expect((await decide(owner, fresh, "allow")).status).toBe(200);
    expect(await agent.next()).toMatchObject({ id: 1, result: { outcome: { optionId: "allow" } } });
  });
});

describe("a socket that floods frames while its request waits for the hub", () => {
  it("is closed (1013) once too many frames wait, instead of queueing them without bound", async () => {
    const { owner, key, sessionId } = await askOnce();
    // The team's hub takes its time admitting (it never answers; the gate gives up after 2 s).
    vi.spyOn(TeamHub.prototype, "admitRequest").mockImplementation(() => new Promise(() => {}));
    const agent = await connectAgent(key, sessionId);
    agent.sendRaw(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "session/request_permission",
        params: permissionParams(sessionId),
      }),
    );
    const update = JSON.stringify({
      jsonrpc: "2.0",
      method: "session/update",
      params: { sessionId, update: { sessionUpdate: "tool_call", toolCallId: "t", title: "ls" } },
    });
    for (let i = 0; i < 100; i++) agent.sendRaw(update);
    const first = await Promise.race([agent.closed, agent.next()]);
    expect(first).toMatchObject({ code: 1013 });
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(1); // the first agent's, untouched
  });
});

describe("a gate's resolved rows are bounded", () => {
  it("resolving stores each row's size; the alarm keeps at most 10 000 resolved rows, never a pending one or one the outbox carries", async () => {
    const { owner, sessionId, approval, agent } = await askOnce();
    let stub = gateStub(owner.teamId, sessionId);
    expect((await decide(owner, approval, "deny")).status).toBe(200);
    await agent.next();
    const [sized] = await gateRows<{ bytes: number; expected: number }>(
      stub,
      `SELECT bytes, length(CAST(record AS BLOB)) + length(CAST(answer AS BLOB)) + length(CAST(agent_options AS BLOB))
         + COALESCE(length(CAST(step_ups AS BLOB)), 0) AS expected FROM approvals WHERE id = ?`,
      approval.id,
    );
    expect(sized?.bytes).toBeGreaterThan(0);
    expect(sized?.bytes).toBe(sized?.expected);

    // 10 050 resolved rows older than the decided one (which expires last), the oldest of them
    // still carried by the outbox, and a pending request older than all of them (held over HTTP).
    const now = Date.now();
    await gateSql(
      stub,
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10050)
       INSERT INTO approvals (id, rpc_id, socket_id, key_id, state, expires_at, agent_options, record, bytes)
       SELECT 'old-' || i, '0', '', 'k', 'expired', ? + i, '[]', (SELECT record FROM approvals WHERE id = ?), 100 FROM n`,
      now - 60_000,
      approval.id,
    );
    await gateSql(
      stub,
      `INSERT INTO approvals (id, rpc_id, socket_id, key_id, state, expires_at, lease_until, agent_options, record)
       SELECT 'held', '0', '', 'k', 'pending', ?, ?, agent_options, record FROM approvals WHERE id = ?`,
      now + 3_600_000,
      now + 3_600_000,
      approval.id,
    );
    await gateSql(
      stub,
      "INSERT INTO outbox (op) VALUES (?)",
      JSON.stringify({
        op: "approval",
        teamId: owner.teamId,
        ownerUserId: owner.userId,
        approval: { ...(await read(owner, approval.id)), id: "old-1" },
      }),
    );
    await abortAllDurableObjects(); // a fresh instance checks the cap at its first alarm
    stub = gateStub(owner.teamId, sessionId); // the old stub died with its instance
    await runInDurableObject(stub, () => undefined); // starts it, which sets its alarm
    expect(await runDurableObjectAlarm(stub)).toBe(true);

    const [resolved] = await gateRows<{ n: number }>(
      stub,
      "SELECT COUNT(*) AS n FROM approvals WHERE state <> 'pending' AND id <> 'old-1'",
    );
    expect(resolved?.n).toBe(10_000);
    const kept = await gateRows<{ id: string }>(
      stub,
      "SELECT id FROM approvals WHERE id IN (?, 'held', 'old-1', 'old-51', 'old-52') ORDER BY id",
      approval.id,
    );
    // Newest first: the decided row and old-10050 … old-52 stay; old-51 … old-2 go; old-1 waits for the outbox.
    expect(kept.map((r) => r.id)).toEqual([approval.id, "held", "old-1", "old-52"].sort());
  });

  it("past the byte bound the oldest resolved rows go too", async () => {
    const { owner, sessionId } = await askOnce();
    const stub = gateStub(owner.teamId, sessionId);
    const { ResolvedCap } = await import("../../worker/gate/resolved-cap");
    const pruned = await runInDurableObject(stub, (_, state) => {
      const { sql } = state.storage;
      sql.exec(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30)
         INSERT INTO approvals (id, rpc_id, socket_id, key_id, state, expires_at, agent_options, record, bytes)
         SELECT 'big-' || i, '0', '', 'k', 'allowed', i, '[]', '{}', 4 * 1024 * 1024 FROM n`,
      );
      return new ResolvedCap(sql).enforce();
    });
    // 100 MiB hold 25 rows of 4 MiB (the request's own resolved rows: none, it is pending).
    expect(pruned).toBe(5);
    const left = await gateRows<{ id: string }>(
      stub,
      "SELECT id FROM approvals WHERE id LIKE 'big-%' ORDER BY expires_at",
    );
    expect(left.map((r) => r.id)).toEqual(Array.from({ length: 25 }, (_, i) => `big-${i + 6}`));
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(1);
  });
});

describe("the gate's memory of revoked keys", () => {
  it("forgets a key a day after its revocation (the alarm's prune), and keeps a younger one", async () => {
    const { owner, keyId: old, sessionId } = await askOnce();
    const stub = gateStub(owner.teamId, sessionId);
    const revoke = async (keyId: string) =>
      expect((await api(`/v1/keys/${keyId}`, { method: "DELETE", cookie: owner.cookie })).status).toBe(200);
    const remembered = async () =>
      (await gateRows<{ key_id: string }>(stub, "SELECT key_id FROM revoked_keys")).map((r) => r.key_id);
    await revoke(old);
    await vi.waitFor(async () => expect(await remembered()).toEqual([old]));

    const clock = simulatedClock();
    try {
      clock.advanceBy(REVOKED_KEY_MEMORY_MS - 60_000);
      // A second key of the session, revoked a day after the first.
      const { key, id: young } = await createKey(owner, "desktop");
      (await connectAgent(key, sessionId)).ws.close();
      await revoke(young);
      await vi.waitFor(async () => expect((await remembered()).sort()).toEqual([old, young].sort()));
      clock.advanceBy(120_000);
      expect(await runDurableObjectAlarm(stub)).toBe(true);
      expect(await remembered()).toEqual([young]);
    } finally {
      clock.restore();
    }
  });
});
