/**
 * A revoked key is obeyed even where its notice is lost: the revocation fans out from the team's
 * hub durably, inside workerd with real D1, the real hub and real gates. One session's gate
 * fails when told (its RPC throws); the hub's alarm, run as production runs it, tells it again.
 * And where the hub itself misses it (the revoking route's call to it throws), the hub reads it
 * back from D1 once its last read is 30 s old.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import type { DecisionBatchAnswer, DecisionBatchResult } from "../../sdk/src/human/approvals";
import type { SessionGate } from "../../worker/gate/session-gate";
import { SessionGate as Gate } from "../../worker/gate/session-gate";
import type { GateStore } from "../../worker/gate/store";
import { REVOCATIONS_MAX_AGE_MS } from "../../worker/hub/revocations";
import { TeamHub } from "../../worker/hub/team-hub";
import { REVOKED_MEMORY_MS } from "../../worker/hub/vouching";
import {
  type AgentSocket,
  api,
  connectAgent,
  createKey,
  decide,
  hubStub,
  json,
  type Member,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import { makeRule, npmTest, teamRule } from "./rule-helpers";
import { stallGate } from "./stall";

afterEach(() => {
  vi.restoreAllMocks();
});

/** While `down()` holds, telling the gate of session `sessionId` of a revocation throws (a failing gate). */
function failingGate(sessionId: string, down: () => boolean): { failures: number } {
  const seen = { failures: 0 };
  const revokeKey = Gate.prototype.revokeKey;
  vi.spyOn(Gate.prototype, "revokeKey").mockImplementation(async function (this: SessionGate, teamId, keyId) {
    const served = (this as unknown as { store: GateStore }).store.meta()?.sessionId;
    if (served === sessionId && down()) {
      seen.failures++;
      throw new Error("gate down");
    }
    return revokeKey.call(this, teamId, keyId);
  });
  return seen;
}

/** The hub's fan-out rows of `keyId`, and whether it remembers the key revoked. */
const hubKnows = (teamId: string, keyId: string) =>
  runInDurableObject(hubStub(teamId), (_hub, state) => {
    const { sql } = state.storage;
    return {
      waiting: sql.exec("SELECT COUNT(*) AS n FROM revocation_fanout WHERE key_id = ?", keyId).one().n,
      remembered: sql.exec("SELECT 1 FROM revoked_keys WHERE key_id = ?", keyId).toArray().length > 0,
    };
  });

/** Time passes: the gates waiting to be told are due now, and (with `memory`) the key's memory is over. */
const timePasses = (teamId: string, memory = false) =>
  runInDurableObject(hubStub(teamId), (_hub, state) => {
    const { sql } = state.storage;
    sql.exec("UPDATE revocation_fanout SET next_at = ?", Date.now() - 1);
    if (memory) sql.exec("UPDATE revoked_keys SET revoked_at = revoked_at - ?", REVOKED_MEMORY_MS + 1);
  });

const revoke = async (owner: Member, keyId: string) => {
  const response = await api(`/v1/keys/${keyId}`, { method: "DELETE", cookie: owner.cookie });
  expect(response.status).toBe(200);
  return json(response);
};

/** A human's allow of `approval`, decided alone: its status and answer. */
async function allowAlone(owner: Member, approval: Approval) {
  const response = await decide(owner, approval, "allow");
  return { status: response.status, body: await json(response) };
}

/** The same allow as a batch's one item: the item's status and answer. */
async function allowInBatch(owner: Member, approval: Approval) {
  const decisions = [{ approvalId: approval.id, optionId: "allow", requestHash: approval.requestHash }];
  const response = await api("/v1/approvals/decisions", {
    method: "POST",
    cookie: owner.cookie,
    body: JSON.stringify({ decisions }),
  });
  expect(response.status).toBe(200);
  const [{ status, ...body }] = (await json<DecisionBatchAnswer>(response)).results as [DecisionBatchResult];
  return { status, body };
}

/** The next answer must be the hub's refusal of a revoked key. */
async function expectRefused(agent: AgentSocket, id: number) {
  expect(await agent.next()).toMatchObject({ id, error: { data: { reason: "key_revoked" } } });
}

describe("a revocation one gate misses", () => {
  it("leaves that key no allow: refused at admission until the hub's alarm reaches the missed gate", async () => {
    const owner = await signUp();
    await makeRule(owner, teamRule);
    const { id: keyId, key } = await createKey(owner);
    const missedId = unique("missed");
    const reachedId = unique("reached");
    const missed = await connectAgent(key, missedId);
    const reached = await connectAgent(key, reachedId);
    const byRule = (sessionId: string) => permissionParams(sessionId, { toolCall: npmTest() });
    // The rule allows the key's requests in both sessions; one more waits for a human in the missed one.
    for (const [agent, sessionId] of [
      [missed, missedId],
      [reached, reachedId],
    ] as const) {
      await agent.ask(1, byRule(sessionId));
      expect(await agent.next()).toMatchObject({ id: 1, result: { _meta: { tapgate: { reason: "rule" } } } });
    }
    await missed.ask(2, permissionParams(missedId));
    expect(await pendingApprovals(owner, missedId)).toHaveLength(1);

    // The missed session's gate throws once when told.
    const gate = failingGate(missedId, () => gate.failures === 0);
    const revokedFrom = Date.now();
    expect(await revoke(owner, keyId)).toMatchObject({ id: keyId, deniedRequests: 0, unreachedSessions: 1 });
    const revokedBy = Date.now();
    expect((await reached.closed).code).toBe(4001);
    expect(await hubKnows(owner.teamId, keyId)).toEqual({ waiting: 1, remembered: true });
    // Told again after its backoff: 2 s after the failed call, doubling.
    const retryAt = await runInDurableObject(hubStub(owner.teamId), (_hub, state) =>
      Number(state.storage.sql.exec("SELECT next_at FROM revocation_fanout WHERE key_id = ?", keyId).one().next_at),
    );
    expect(retryAt).toBeGreaterThanOrEqual(revokedFrom + 2_000);
    expect(retryAt).toBeLessThanOrEqual(revokedBy + 2_000);

    // Its socket is still served there, but the hub refuses the key: nothing is held, no rule allows.
    await missed.ask(3, byRule(missedId));
    await expectRefused(missed, 3);

    // The backoff passes: the hub's alarm tells the missed gate again, which denies and closes.
    await timePasses(owner.teamId);
    expect(await runDurableObjectAlarm(hubStub(owner.teamId))).toBe(true);
    expect(await missed.next()).toMatchObject({
      id: 2,
      result: { outcome: { outcome: "selected", optionId: "deny" }, _meta: { tapgate: { reason: "key_revoked" } } },
    });
    expect((await missed.closed).code).toBe(4001);
    expect(gate.failures).toBe(1);
    expect((await hubKnows(owner.teamId, keyId)).waiting).toBe(0);
  });

  // A single decision hands the gate the hub's word on the key, asked with the decider's role; a
  // batch's items do not, and the gate asks the hub itself.
  it.each([
    ["one decision", allowAlone],
    ["a batch's item", allowInBatch],
  ])(
    "leaves a request the key had held there no allow: a human's allow (%s) ends it key_revoked, answered 410",
    async (_, allow) => {
      const owner = await signUp();
      const { id: keyId, key } = await createKey(owner);
      const sessionId = unique("held");
      const agent = await connectAgent(key, sessionId);
      await agent.ask(1, permissionParams(sessionId));
      const [approval] = await pendingApprovals(owner, sessionId);
      if (!approval) throw new Error("not pending");

      const gate = failingGate(sessionId, () => gate.failures === 0);
      expect(await revoke(owner, keyId)).toMatchObject({ unreachedSessions: 1 });
      expect(await pendingApprovals(owner, sessionId)).toHaveLength(1);

      // The card is still there; a teammate taps Allow before the hub's alarm reaches the gate.
      expect(await allow(owner, approval)).toMatchObject({
        status: 410,
        body: { error: "already_resolved", approval: { state: "denied", reason: "key_revoked" } },
      });
      expect(await agent.next()).toMatchObject({
        id: 1,
        result: { outcome: { outcome: "selected", optionId: "deny" }, _meta: { tapgate: { reason: "key_revoked" } } },
      });
      expect((await agent.closed).code).toBe(4001);
    },
  );

  it("is remembered past its memory while a gate is not told, and forgotten once every gate has it", async () => {
    const owner = await signUp();
    const { id: keyId, key } = await createKey(owner);
    const sessionId = unique("down");
    const agent = await connectAgent(key, sessionId);
    let down = true;
    const gate = failingGate(sessionId, () => down);
    expect(await revoke(owner, keyId)).toMatchObject({ unreachedSessions: 1 });

    // A minute later the gate still fails: the key's memory is over, yet it is kept and refused.
    await timePasses(owner.teamId, true);
    expect(await runDurableObjectAlarm(hubStub(owner.teamId))).toBe(true);
    expect(gate.failures).toBe(2);
    expect(await hubKnows(owner.teamId, keyId)).toEqual({ waiting: 1, remembered: true });
    await agent.ask(1, permissionParams(sessionId));
    await expectRefused(agent, 1);

    // The gate recovers: the next alarm tells it, and the key is forgotten (D1 refuses it for good).
    down = false;
    await timePasses(owner.teamId);
    expect(await runDurableObjectAlarm(hubStub(owner.teamId))).toBe(true);
    expect((await agent.closed).code).toBe(4001);
    expect(await hubKnows(owner.teamId, keyId)).toEqual({ waiting: 0, remembered: false });
  });
});

/** The team's hub throws when the revoking route tells it (a hub that cannot be reached). */
function unreachableHub(): void {
  vi.spyOn(TeamHub.prototype, "keyRevoked").mockRejectedValue(new Error("hub down"));
}

/** When the hub last read D1's revocations back (null: never). */
const readBackAt = (teamId: string) =>
  runInDurableObject(hubStub(teamId), (_hub, state) => {
    const v = state.storage.sql.exec("SELECT v FROM meta WHERE k = 'revocations_read'").toArray()[0]?.v;
    return typeof v === "string" ? (JSON.parse(v) as { at: number }).at : null;
  });

/** When the hub last remembered `keyId` revoked (its `revoked_keys` row), if it does. */
const revokedAtHub = (teamId: string, keyId: string) =>
  runInDurableObject(hubStub(teamId), (_hub, state) => {
    const row = state.storage.sql.exec("SELECT revoked_at FROM revoked_keys WHERE key_id = ?", keyId).toArray()[0];
    return row?.revoked_at as number | undefined;
  });

/**
 * A key revoked that the team's hub never hears of: its session asked once (request 1 held) and
 * the hub read D1 back (none yet); then the route cannot tell the hub, and the session's gate
 * fails the one call the route makes itself (`500`).
 */
async function revokedUnheard(name: string) {
  const owner = await signUp();
  const { id: keyId, key } = await createKey(owner);
  const sessionId = unique(name);
  const agent = await connectAgent(key, sessionId);
  await agent.ask(1, permissionParams(sessionId));
  await vi.waitFor(async () => expect(await readBackAt(owner.teamId)).not.toBeNull());
  unreachableHub();
  const gate = failingGate(sessionId, () => gate.failures === 0);
  const response = await api(`/v1/keys/${keyId}`, { method: "DELETE", cookie: owner.cookie });
  expect(response.status).toBe(500);
  return { owner, keyId, sessionId, agent, gate };
}

/** The key's revocation is REVOCATIONS_MAX_AGE_MS older in D1: past the route's grace, for the read back. */
const ageRevocation = (keyId: string) =>
  env.DB.prepare("UPDATE api_keys SET revoked_at = revoked_at - ? WHERE id = ?")
    .bind(REVOCATIONS_MAX_AGE_MS, keyId)
    .run();

/** Where the hub's next read back of D1's revocations starts. */
const readBackCursor = (teamId: string) =>
  runInDurableObject(hubStub(teamId), (_hub, state) => {
    const v = state.storage.sql.exec("SELECT v FROM meta WHERE k = 'revocations_read'").one().v as string;
    return (JSON.parse(v) as { after: unknown }).after;
  });

/** While `down()` holds, D1 fails the hub's read back of the team's revocations (a D1 that cannot be read). */
function failingRevocationReads(down: () => boolean): { failures: number } {
  const seen = { failures: 0 };
  const d1 = Object.getPrototypeOf(env.DB) as D1Database;
  const prepare = d1.prepare;
  vi.spyOn(d1, "prepare").mockImplementation(function (this: D1Database, query: string) {
    if (query.includes("json_group_array(s.session_id)") && down()) {
      seen.failures++;
      throw new Error("D1_ERROR: D1 is overloaded");
    }
    return prepare.call(this, query);
  });
  return seen;
}

/** The hub's last read back happened `ms` earlier than it did. */
const ageReadBack = (teamId: string, ms: number) =>
  runInDurableObject(hubStub(teamId), (_hub, state) => {
    state.storage.sql.exec(
      "UPDATE meta SET v = json_set(v, '$.at', json_extract(v, '$.at') - ?) WHERE k = 'revocations_read'",
      ms,
    );
  });

/** The reason an answer gives: a denial's `_meta`, or a refusal's `data`. */
const reasonOf = (answer: Record<string, unknown>) =>
  (answer as { result?: { _meta?: { tapgate?: { reason?: string } } } }).result?._meta?.tapgate?.reason ??
  (answer as { error?: { data?: { reason?: string } } }).error?.data?.reason;

describe("a revocation one gate never answers", () => {
  it("is answered within the route's budget, that gate counted unreached, and reaches it once it answers", async () => {
    const owner = await signUp();
    const { id: keyId, key } = await createKey(owner);
    const stuckId = unique("stuck");
    const liveId = unique("live");
    const stuck = await connectAgent(key, stuckId);
    const live = await connectAgent(key, liveId);
    await live.ask(1, permissionParams(liveId));
    const stalled = await stallGate(owner.teamId, stuckId);
    try {
      // The hub answers once the other gate is told, not after the stuck one's whole budget.
      const revoked = await api(`/v1/keys/${keyId}`, { method: "DELETE", cookie: owner.cookie });
      expect(revoked.status).toBe(200);
      expect(await json(revoked)).toMatchObject({ id: keyId, deniedRequests: 1, unreachedSessions: 1 });
      expect((await live.closed).code).toBe(4001);
      expect(await hubKnows(owner.teamId, keyId)).toEqual({ waiting: 1, remembered: true });
    } finally {
      stalled.release();
    }
    // The stuck gate takes calls again: the revocation still waiting on it closes its socket.
    expect((await stuck.closed).code).toBe(4001);
  }, 30_000);
});

describe("a revocation the hub never hears", () => {
  it("is read back from D1 once the hub's last read is 30 s old: the key refused, its gate told", async () => {
    const { owner, keyId, sessionId, agent, gate } = await revokedUnheard("unheard");
    expect(gate.failures).toBe(1);
    expect(await hubKnows(owner.teamId, keyId)).toEqual({ waiting: 0, remembered: false });

    // Within 30 s of the hub's last read its gate still holds the key's requests: the gap this bounds.
    await agent.ask(2, permissionParams(sessionId));
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(2);

    // 30 s on, the next admission has the hub read D1 back: it takes the key up and tells the gate.
    await ageReadBack(owner.teamId, REVOCATIONS_MAX_AGE_MS);
    await ageRevocation(keyId);
    await agent.ask(3, permissionParams(sessionId));
    const answers = [await agent.next(), await agent.next(), await agent.next()];
    expect(answers.map((a) => a.id).sort()).toEqual([1, 2, 3]);
    expect(answers.map(reasonOf)).toEqual(["key_revoked", "key_revoked", "key_revoked"]);
    expect((await agent.closed).code).toBe(4001);
    await vi.waitFor(async () => expect(await hubKnows(owner.teamId, keyId)).toEqual({ waiting: 0, remembered: true }));
    expect(await pendingApprovals(owner, sessionId)).toEqual([]);
  });

  it("is read again 30 s after D1 fails the read back, from where it was: the key then refused", async () => {
    const { owner, keyId, sessionId, agent } = await revokedUnheard("d1-down");
    const cursor = await readBackCursor(owner.teamId);
    await ageRevocation(keyId);

    // D1 fails the read back: the admission that started it is held all the same, the failure logged.
    let d1Down = true;
    const d1 = failingRevocationReads(() => d1Down);
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    await ageReadBack(owner.teamId, REVOCATIONS_MAX_AGE_MS);
    const failedAt = Date.now();
    await agent.ask(2, permissionParams(sessionId));
    await vi.waitFor(async () => expect(await readBackAt(owner.teamId)).toBeGreaterThanOrEqual(failedAt));
    expect(d1.failures).toBe(1);
    expect(logged).toHaveBeenCalledWith(expect.stringContaining("could not be read back"));
    expect(await readBackCursor(owner.teamId)).toEqual(cursor);
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(2);

    // Within 30 s of the failed read none is tried; once D1 answers, the next read 30 s on finds the key.
    d1Down = false;
    await agent.ask(3, permissionParams(sessionId));
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(3);
    expect(d1.failures).toBe(1);
    await ageReadBack(owner.teamId, REVOCATIONS_MAX_AGE_MS);
    await agent.ask(4, permissionParams(sessionId));
    const answers = await Promise.all([1, 2, 3, 4].map(() => agent.next()));
    expect(answers.map((a) => a.id).sort()).toEqual([1, 2, 3, 4]);
    expect(answers.map(reasonOf)).toEqual(Array(4).fill("key_revoked"));
    expect((await agent.closed).code).toBe(4001);
  });

  it("never stands in an admission's way: a cursor that cannot be read is replaced, the request held", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("cursor");
    const agent = await connectAgent(key, sessionId);
    await vi.waitFor(async () => expect(await readBackAt(owner.teamId)).not.toBeNull());
    await runInDurableObject(hubStub(owner.teamId), (_hub, state) => {
      state.storage.sql.exec("UPDATE meta SET v = 'not a cursor' WHERE k = 'revocations_read'");
    });
    await agent.ask(1, permissionParams(sessionId));
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(1);
    await vi.waitFor(async () => expect(await readBackAt(owner.teamId)).toBeGreaterThan(0));
  });

  it("never takes up again a key the hub was told of, once its memory of it is over", async () => {
    const owner = await signUp();
    const { id: keyId, key } = await createKey(owner);
    const { key: otherKey } = await createKey(owner);
    const otherId = unique("other");
    await connectAgent(key, unique("heard"));
    const other = await connectAgent(otherKey, otherId);
    await vi.waitFor(async () => expect(await readBackAt(owner.teamId)).not.toBeNull());
    const told = vi.spyOn(Gate.prototype, "revokeKey");
    expect(await revoke(owner, keyId)).not.toHaveProperty("unreachedSessions");
    expect(told).toHaveBeenCalledTimes(1);

    // A minute on, the hub no longer refuses the key itself (D1 does); a read back finds it in D1.
    await timePasses(owner.teamId, true);
    const rememberedAt = await revokedAtHub(owner.teamId, keyId);
    await ageReadBack(owner.teamId, REVOCATIONS_MAX_AGE_MS);
    const before = (await readBackAt(owner.teamId)) ?? 0;
    await other.ask(1, permissionParams(otherId));
    await vi.waitFor(async () => expect(await readBackAt(owner.teamId)).toBeGreaterThan(before));
    // Heard already: not remembered anew (taken up before the read is saved), no session told again.
    expect(await revokedAtHub(owner.teamId, keyId)).toBe(rememberedAt);
    expect(await hubKnows(owner.teamId, keyId)).toMatchObject({ waiting: 0 });
    expect(told).toHaveBeenCalledTimes(1);
  });
});
