/**
 * What follows a decision, under load: the team's hub group-commits what its sessions' outboxes
 * send (index rows and audit events) into one D1 batch with one compare-and-swap per run, and a
 * storm of dropped agent sockets resolves every request exactly once. Behaviour only: speed
 * lives in `scripts/bench.mjs`.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { type AuditEntry, chainEvents } from "../../worker/audit-chain";
import { auditEntryStatement, auditTail, type OutboxOp } from "../../worker/db";
import type { TeamHubApi } from "../../worker/hub/api";
import { REPORTS_PER_TURN } from "../../worker/hub/report-turns";
import { DEFAULT_POLICY } from "../../worker/policy";
import type { Env } from "../../worker/types";
import {
  api,
  connectAgent,
  createKey,
  flush,
  hubStub,
  json,
  type Member,
  pendingApprovals,
  permissionParams,
  settled,
  signUp,
  unique,
} from "./helpers";

/** The D1 binding the hub itself holds (the object's `env` is protected). */
const dbOf = (instance: TeamHubApi) => (instance as unknown as { env: Env }).env.DB;
const verify = async (m: Member) =>
  json<{ ok: boolean; entries: number }>(await api("/v1/audit/verify", { cookie: m.cookie }));

function burst(teamId: string, sessions: number): OutboxOp[][] {
  return Array.from({ length: sessions }, (_, i) => [
    {
      op: "session",
      teamId,
      sessionId: unique(`burst-${i}`),
      info: { title: null, agent: null, host: null, cwd: null },
      connected: false,
      at: Date.now(),
    },
    {
      op: "audit",
      eventId: unique("evt"),
      teamId,
      at: Date.now(),
      actor: "system",
      action: "test.burst",
      subject: `s${i}`,
      detail: { i },
    },
  ]);
}

describe("group commit of the sessions' outboxes", () => {
  it("writes a burst from 20 sessions as one D1 batch: their index rows and ONE audit run", async () => {
    const owner = await signUp();
    const before = await verify(owner);
    const calls = burst(owner.teamId, 20);
    const statements = await runInDurableObject(hubStub(owner.teamId), async (instance: TeamHubApi) => {
      const batch = vi.spyOn(dbOf(instance), "batch");
      try {
        await Promise.all(calls.map((ops) => instance.writeOutbox(owner.teamId, ops)));
        return batch.mock.calls.map((call) => call[0].length);
      } finally {
        batch.mockRestore();
      }
    });
    // The 20 index rows, the audit run, and the one statement that queues its webhook messages.
    expect(statements).toEqual([20 + 1 + 1]);
    const after = await verify(owner);
    expect(after.ok).toBe(true);
    expect(after.entries - before.entries).toBe(20);
    const { results } = await env.DB.prepare(
      "SELECT subject FROM audit_log WHERE team_id = ? AND action = 'test.burst' ORDER BY seq",
    )
      .bind(owner.teamId)
      .all<{ subject: string }>();
    // In the order the sessions called, each once.
    expect(results.map((r) => r.subject)).toEqual(calls.map((_, i) => `s${i}`));
  });

  it("a run whose head moved writes nothing; the retry chains each event once, after the other writer's", async () => {
    const owner = await signUp();
    const [first, second] = burst(owner.teamId, 2) as [OutboxOp[], OutboxOp[]];
    await hubStub(owner.teamId).writeOutbox(owner.teamId, first);
    // Another writer appends behind the hub's back: the hub's head is now stale.
    const tail = await auditTail(env.DB, owner.teamId);
    const [other] = chainEvents(tail.hash, [
      {
        eventId: unique("evt"),
        teamId: owner.teamId,
        at: Date.now(),
        actor: "system",
        action: "test.burst",
        subject: "other",
      },
    ]);
    await auditEntryStatement(env.DB, other as AuditEntry).run();
    const batches = await runInDurableObject(hubStub(owner.teamId), async (instance: TeamHubApi) => {
      const batch = vi.spyOn(dbOf(instance), "batch");
      try {
        await instance.writeOutbox(owner.teamId, second);
        return batch.mock.calls.length;
      } finally {
        batch.mockRestore();
      }
    });
    expect(batches).toBe(2); // the refused run, then the run after re-reading the head
    expect((await verify(owner)).ok).toBe(true);
    const { results } = await env.DB.prepare(
      "SELECT subject FROM audit_log WHERE team_id = ? AND action = 'test.burst' ORDER BY seq",
    )
      .bind(owner.teamId)
      .all<{ subject: string }>();
    expect(results.map((r) => r.subject)).toEqual(["s0", "other", "s1"]);
  });
});

describe("a storm of gate reports", () => {
  it("starts a few per turn, in order: an admission asked behind 100 of them is answered before the rest start", async () => {
    const owner = await signUp();
    const { startedBeforeAdmission, taken } = await runInDurableObject(
      hubStub(owner.teamId),
      async (instance: TeamHubApi) => {
        const released = vi.spyOn(instance, "releaseRequest");
        try {
          const reports = Array.from({ length: 100 }, (_, i) =>
            instance.gateReport(owner.teamId, { news: [{ kind: "released", approvalId: `apr_storm_${i}` }] }),
          );
          const verdict = await instance.admitRequest(owner.teamId, {
            approvalId: "apr_behind_the_storm",
            keyId: "key_storm",
            sessionId: "storm",
            ownerUserId: owner.userId,
            expiresAt: Date.now() + 60_000,
            limits: DEFAULT_POLICY.limits,
          });
          expect(verdict.ok).toBe(true);
          const startedBeforeAdmission = released.mock.calls.length;
          await Promise.all(reports);
          return { startedBeforeAdmission, taken: released.mock.calls.map((call) => call[1]) };
        } finally {
          released.mockRestore();
        }
      },
    );
    // Without the turns all 100 started at once, ahead of the admission.
    expect(startedBeforeAdmission).toBe(REPORTS_PER_TURN);
    expect(taken).toEqual(Array.from({ length: 100 }, (_, i) => `apr_storm_${i}`));
  });
});

describe("a storm of dropped agent sockets", () => {
  it("resolves every pending request once, as denied, with one audit event each", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const agents = await Promise.all(
      Array.from({ length: 12 }, async () => {
        const sessionId = unique("storm");
        const agent = await connectAgent(key, sessionId);
        await agent.ask(1, permissionParams(sessionId));
        const [approval] = await pendingApprovals(owner, sessionId);
        return { agent, sessionId, approval: approval as Approval };
      }),
    );
    for (const { agent } of agents) agent.ws.close(1001, "gone");
    const resolved = await Promise.all(agents.map(({ approval }) => settled(owner, approval.id)));
    expect(resolved.map((a) => [a.state, a.reason])).toEqual(agents.map(() => ["denied", "agent_disconnected"]));
    await Promise.all(agents.map(({ sessionId }) => flush(owner.teamId, sessionId)));
    const ids = agents.map(({ approval }) => approval.id);
    const { results: index } = await env.DB.prepare(
      `SELECT id, state FROM approvals WHERE team_id = ? AND id IN (${ids.map(() => "?").join(", ")})`,
    )
      .bind(owner.teamId, ...ids)
      .all<{ id: string; state: string }>();
    expect(index.map((r) => r.state)).toEqual(ids.map(() => "denied"));
    const { results: events } = await env.DB.prepare(
      "SELECT subject, COUNT(*) AS n FROM audit_log WHERE team_id = ? AND action = 'approval.denied' GROUP BY subject",
    )
      .bind(owner.teamId)
      .all<{ subject: string; n: number }>();
    expect(events.map((e) => e.subject).sort()).toEqual([...ids].sort());
    expect(events.every((e) => e.n === 1)).toBe(true);
    expect((await verify(owner)).ok).toBe(true);
  }, 60_000);
});
