/**
 * The hub's group commit under a poison row and under big callers: a group whose D1 batch fails
 * is written again caller by caller, so only the caller whose row D1 refuses gets the error; a
 * group is bounded by bytes as well as rows. D1 refuses through a trigger, as production meets it.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { OutboxOp } from "../../worker/db";
import type { TeamHubApi } from "../../worker/hub/api";
import type { Env } from "../../worker/types";
import { api, hubStub, json, signUp, unique } from "./helpers";

const dbOf = (instance: TeamHubApi) => (instance as unknown as { env: Env }).env.DB;

function auditOp(teamId: string, action: string, detail: Record<string, unknown> = {}): OutboxOp {
  return {
    op: "audit",
    eventId: unique("evt"),
    teamId,
    at: Date.now(),
    actor: "system",
    action,
    subject: action,
    detail,
  };
}

const actions = async (teamId: string) =>
  (
    await env.DB.prepare("SELECT action FROM audit_log WHERE team_id = ? AND action LIKE 'test.%' ORDER BY seq")
      .bind(teamId)
      .all<{ action: string }>()
  ).results.map((r) => r.action);

describe("the hub's group commit", () => {
  it("writes a failed group again caller by caller: only the poison row's caller fails", async () => {
    const owner = await signUp();
    const trigger = `refuse_poison_${Date.now().toString(36)}`;
    await env.DB.exec(
      `CREATE TRIGGER ${trigger} BEFORE INSERT ON audit_log WHEN NEW.action = 'test.poison' BEGIN SELECT RAISE(ABORT, 'poison'); END;`,
    );
    try {
      const calls = ["test.first", "test.poison", "test.last"].map((a) => [auditOp(owner.teamId, a)]);
      const outcomes = await runInDurableObject(hubStub(owner.teamId), async (instance: TeamHubApi) => {
        const settled = await Promise.allSettled(calls.map((ops) => instance.writeOutbox(owner.teamId, ops)));
        return settled.map((s) => s.status);
      });
      expect(outcomes).toEqual(["fulfilled", "rejected", "fulfilled"]);
      expect(await actions(owner.teamId)).toEqual(["test.first", "test.last"]);
    } finally {
      await env.DB.exec(`DROP TRIGGER ${trigger}`);
    }
    expect(await json(await api("/v1/audit/verify", { cookie: owner.cookie }))).toMatchObject({ ok: true });
  });

  it("bounds a group by bytes: callers past 2 MiB wait for the next batch", async () => {
    const owner = await signUp();
    const big = "x".repeat(800 * 1024);
    const calls = ["test.a", "test.b", "test.c"].map((a) => [auditOp(owner.teamId, a, { big })]);
    const batches = await runInDurableObject(hubStub(owner.teamId), async (instance: TeamHubApi) => {
      const batch = vi.spyOn(dbOf(instance), "batch");
      try {
        await Promise.all(calls.map((ops) => instance.writeOutbox(owner.teamId, ops)));
        return batch.mock.calls.length;
      } finally {
        batch.mockRestore();
      }
    });
    expect(batches).toBe(2);
    expect(await actions(owner.teamId)).toEqual(["test.a", "test.b", "test.c"]);
  });
});
