/**
 * Team quotas (issue 9): requests per key per minute (token bucket), pending per team and per
 * key across sessions, stored bytes per request, retention; refusals on the socket, over HTTP
 * and on the live feed; only owners change the limits.
 */
import {
  abortAllDurableObjects,
  createExecutionContext,
  env,
  runDurableObjectAlarm,
  runInDurableObject,
  waitOnExecutionContext,
} from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import type { TeamLimits } from "../../sdk/src/human/policy";
import { RPC_ERROR } from "../../sdk/src/protocol";
import { canonicalJson, sha256Hex } from "../../worker/crypto";
import type { SessionGate } from "../../worker/gate/session-gate";
import type { TeamHub } from "../../worker/hub/team-hub";
import worker from "../../worker/index";
import { DEFAULT_POLICY } from "../../worker/policy";
import type { Env as WorkerEnv } from "../../worker/types";
import {
  api,
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
  settled,
  signUp,
  unique,
} from "./helpers";
import { addMember, openLive, seedApprovals } from "./team-helpers";

const DAY = 24 * 60 * 60 * 1000;

/** The hub's stored rows for a key's bucket, or for one pending slot. */
const bucketRows = (teamId: string, keyId: string) =>
  runInDurableObject(
    hubStub(teamId),
    (_: TeamHub, state) =>
      state.storage.sql.exec("SELECT 1 FROM quota_buckets WHERE key_id = ?", keyId).toArray().length,
  );
const pendingRows = (teamId: string, approvalId: string) =>
  runInDurableObject(
    hubStub(teamId),
    (_: TeamHub, state) =>
      state.storage.sql.exec("SELECT 1 FROM quota_pending WHERE approval_id = ?", approvalId).toArray().length,
  );

const putPolicy = (m: Member, body: unknown) =>
  api("/v1/policy", { method: "PUT", cookie: m.cookie, body: JSON.stringify(body) });

async function setLimits(owner: Member, limits: Partial<TeamLimits>): Promise<void> {
  const response = await putPolicy(owner, { ...DEFAULT_POLICY, limits: { ...DEFAULT_POLICY.limits, ...limits } });
  if (response.status !== 200) throw new Error(`policy answered ${response.status}`);
}

function askHttp(key: string, sessionId: string, params: object = permissionParams(sessionId)) {
  return api(`/v1/agent/sessions/${sessionId}/permissions`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}` },
    body: JSON.stringify(params),
  });
}

/** The team's hub as its class (tests read its counters through `runInDurableObject`). */

describe("team quotas", () => {
  it("GET /v1/policy shows the default limits; only owners change them, and a body without them keeps them", async () => {
    const owner = await signUp();
    const admin = await addMember(owner, "admin");
    const policy = await json<{ limits: TeamLimits }>(await api("/v1/policy", { cookie: owner.cookie }));
    expect(policy.limits).toEqual({
      requestsPerKeyPerMinute: 120,
      burstPerKey: 40,
      pendingPerTeam: 500,
      pendingPerKey: 100,
      storedBytesPerRequest: 256 * 1024,
      retentionDays: 90,
    });

    const changed = { ...DEFAULT_POLICY.limits, pendingPerTeam: 7 };
    const refused = await putPolicy(admin, { ...DEFAULT_POLICY, limits: changed });
    expect(refused.status).toBe(403);
    expect(await json(refused)).toMatchObject({ error: "forbidden" });
    expect((await putPolicy(owner, { limits: { pendingPerTeam: 0 } })).status).toBe(400);
    expect((await putPolicy(owner, { limits: { surprise: 1 } })).status).toBe(400);

    expect((await putPolicy(owner, { ...DEFAULT_POLICY, limits: changed })).status).toBe(200);
    // An admin may still change the rest: without limits, or with the current ones sent back.
    const lifetime = await putPolicy(admin, { lifetimeMs: 120_000 });
    expect(lifetime.status).toBe(200);
    expect(await json(lifetime)).toMatchObject({ lifetimeMs: 120_000, limits: changed });
    expect((await putPolicy(admin, { lifetimeMs: 180_000, limits: changed })).status).toBe(200);
    expect(await json(await api("/v1/policy", { cookie: owner.cookie }))).toMatchObject({
      lifetimeMs: 180_000,
      limits: changed,
    });
  });

  it("a key's bucket lets a burst through, refuses with retryAfterMs, and refills as time moves", async () => {
    const owner = await signUp();
    await setLimits(owner, { requestsPerKeyPerMinute: 2, burstPerKey: 2 });
    const { key, id: keyId } = await createKey(owner);
    const sessionId = unique("bucket");
    expect((await askHttp(key, sessionId)).status).toBe(201);
    expect((await askHttp(key, unique("other"))).status).toBe(201); // the bucket is the key's, across sessions

    const refused = await askHttp(key, sessionId);
    expect(refused.status).toBe(429);
    const body = await json<{ error: string; reason: string; limit: string; retryAfterMs: number }>(refused);
    expect(body).toMatchObject({ error: "quota_exceeded", reason: "quota", limit: "requestsPerKeyPerMinute" });
    expect(body.retryAfterMs).toBeGreaterThan(25_000);
    expect(body.retryAfterMs).toBeLessThanOrEqual(30_000);
    expect(refused.headers.get("Retry-After")).toBe(String(Math.ceil(body.retryAfterMs / 1000)));

    // Half a minute passes for the bucket (its clock moved back): one token is there again.
    await vi.waitFor(() => expect(bucketRows(owner.teamId, keyId)).resolves.toBe(1)); // written after the answers
    await runInDurableObject(hubStub(owner.teamId), (_: TeamHub, state) => {
      state.storage.sql.exec(
        "UPDATE quota_buckets SET at = at - 30000, full_at = full_at - 30000 WHERE key_id = ?",
        keyId,
      );
    });
    expect((await askHttp(key, sessionId)).status).toBe(201);
    expect((await askHttp(key, sessionId)).status).toBe(429);
  });

  it("counts pending requests per team and per key across sessions; an ended request frees its slot", async () => {
    const owner = await signUp();
    await setLimits(owner, { pendingPerTeam: 3, pendingPerKey: 2 });
    const first = await createKey(owner, "first");
    const second = await createKey(owner, "second");
    const [s1, s2, s3] = [unique("a"), unique("b"), unique("c")];

    expect((await askHttp(first.key, s1)).status).toBe(201);
    const held = await json<{ approvalId: string }>(await askHttp(first.key, s2));
    const overKey = await askHttp(first.key, s3);
    expect(overKey.status).toBe(429);
    expect(await json(overKey)).toMatchObject({ error: "quota_exceeded", limit: "pendingPerKey" });
    expect(Number(overKey.headers.get("Retry-After"))).toBeGreaterThan(0);

    expect((await askHttp(second.key, s3)).status).toBe(201);
    const overTeam = await askHttp(second.key, s3);
    expect(overTeam.status).toBe(429);
    expect(await json(overTeam)).toMatchObject({ error: "quota_exceeded", limit: "pendingPerTeam" });
    expect(await runInDurableObject(hubStub(owner.teamId), (hub: TeamHub) => hub.quotaPending())).toBe(3);

    // The agent gives one up: its slot is free for the team and for its key.
    const cancelled = await api(`/v1/agent/approvals/${held.approvalId}`, {
      method: "DELETE",
      headers: { Authorization: `Bearer ${first.key}` },
    });
    expect(cancelled.status).toBe(200);
    await waitForHubPending(owner.teamId, 2);
    expect((await askHttp(first.key, s3)).status).toBe(201);
  });

  it("a slot whose release was lost counts only until the request's expiry", async () => {
    const owner = await signUp();
    await setLimits(owner, { pendingPerTeam: 1 });
    const { key } = await createKey(owner);
    const hub = hubStub(owner.teamId);
    // A request the hub counted but whose end it never heard of (the gate's news was lost).
    const verdict = await hub.admitRequest(owner.teamId, {
      approvalId: "apr_lost",
      keyId: "key_elsewhere",
      sessionId: "lost",
      ownerUserId: owner.userId,
      expiresAt: Date.now() + 60_000,
      limits: { ...DEFAULT_POLICY.limits, pendingPerTeam: 1 },
    });
    expect(verdict).toEqual({ ok: true, rules: [] }); // admitted, with the standing rules that may apply: none
    const refused = await askHttp(key, unique("heal"));
    expect(await json(refused)).toMatchObject({ limit: "pendingPerTeam" });
    expect((await json<{ retryAfterMs: number }>(await askHttp(key, unique("heal")))).retryAfterMs).toBeLessThanOrEqual(
      60_000,
    );
    // Its expiry passes (time moved for the slot): it no longer counts.
    await vi.waitFor(() => expect(pendingRows(owner.teamId, "apr_lost")).resolves.toBe(1)); // written after the answer
    await runInDurableObject(hub, (_: TeamHub, state) => {
      state.storage.sql.exec("UPDATE quota_pending SET expires_at = ? WHERE approval_id = 'apr_lost'", Date.now() - 1);
    });
    expect((await askHttp(key, unique("heal"))).status).toBe(201);
  });

  it("a release that overtakes its admit (a gate that stopped waiting) leaves no slot behind", async () => {
    const owner = await signUp();
    const hub = hubStub(owner.teamId);
    await hub.releaseRequest(owner.teamId, "apr_overtaken");
    const late = await hub.admitRequest(owner.teamId, {
      approvalId: "apr_overtaken",
      keyId: "key_late",
      sessionId: "late",
      ownerUserId: owner.userId,
      expiresAt: Date.now() + 60_000,
      limits: DEFAULT_POLICY.limits,
    });
    expect(late.ok).toBe(false);
    expect(await runInDurableObject(hub, (h: TeamHub) => h.quotaPending())).toBe(0);
  });

  it("answers admissions before writing them: a burst counts what it admitted, and the slots are stored after", async () => {
    const owner = await signUp();
    // A fresh stub each time: the instance is restarted below.
    const ask = (approvalId: string) =>
      hubStub(owner.teamId).admitRequest(owner.teamId, {
        approvalId,
        keyId: "key_burst",
        sessionId: "burst",
        ownerUserId: owner.userId,
        expiresAt: Date.now() + 60_000,
        limits: { ...DEFAULT_POLICY.limits, pendingPerTeam: 2 },
      });
    // Three stubs deliver in no set order: whichever two came first are admitted, the third refused.
    const burst = ["apr_b1", "apr_b2", "apr_b3"];
    const verdicts = await Promise.all(burst.map(ask));
    const admitted = burst.filter((_, i) => verdicts[i]?.ok);
    expect(admitted).toHaveLength(2);
    expect(verdicts.find((v) => !v.ok)).toMatchObject({ limit: "pendingPerTeam" });
    // The write was queued (a 0 ms timer) before the answers left; a timer queued after it runs after it.
    const stored = await runInDurableObject(hubStub(owner.teamId), async (_: TeamHub, state) => {
      await new Promise((resolve) => setTimeout(resolve, 0));
      return state.storage.sql
        .exec<{ id: string }>("SELECT approval_id AS id FROM quota_pending ORDER BY approval_id")
        .toArray()
        .map((r) => r.id);
    });
    expect(stored).toEqual(admitted);
    // A new instance counts them from storage.
    await abortAllDurableObjects();
    expect(await runInDurableObject(hubStub(owner.teamId), (h: TeamHub) => h.quotaPending())).toBe(2);
    await hubStub(owner.teamId).releaseRequest(owner.teamId, admitted[0] as string);
    expect((await ask("apr_b4")).ok).toBe(true);
  });

  it("refuses on the socket with -32001 and data {reason, limit, retryAfterMs}; the dashboard is told", async () => {
    const owner = await signUp();
    await setLimits(owner, { pendingPerKey: 1 });
    const live = await openLive(owner);
    const { key } = await createKey(owner);
    const sessionId = unique("sock");
    const agent = await connectAgent(key, sessionId);
    await agent.ask(1, permissionParams(sessionId));
    await agent.ask(2, permissionParams(sessionId));
    const reply = await agent.next<{ id: number; error: { code: number; data: Record<string, unknown> } }>();
    expect(reply).toMatchObject({
      id: 2,
      error: { code: RPC_ERROR.tooManyPending, data: { reason: "quota", limit: "pendingPerKey" } },
    });
    expect(reply.error.data.retryAfterMs).toBeGreaterThan(0);

    const notice = await live.next((f) => f.type === "refused");
    expect(notice).toMatchObject({
      type: "refused",
      refusal: { sessionId, owner: { userId: owner.userId, name: "Ada" }, limit: "pendingPerKey" },
    });
    // Only the first request was held.
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(1);
    live.ws.close();
  });

  it("stores a large request cut to the cap with a marker; the hash covers the whole request; it is denied, never allowed", async () => {
    const owner = await signUp();
    await setLimits(owner, { storedBytesPerRequest: 4096 });
    const { key } = await createKey(owner);
    const sessionId = unique("big");
    const params = permissionParams(sessionId, {
      toolCall: {
        toolCallId: "big-write",
        title: "write a big file",
        kind: "edit",
        rawInput: { path: "/src/big.txt", content: "y".repeat(100_000) },
      },
    });
    const created = await askHttp(key, sessionId, params);
    expect(created.status).toBe(201);
    const { approvalId } = await json<{ approvalId: string }>(created);

    const [approval] = (await pendingApprovals(owner, sessionId)) as [Approval];
    const fullSnapshot = { toolCall: params.toolCall, session: { title: null, agent: null, host: null, cwd: null } };
    expect(approval.requestHash).toBe(sha256Hex(canonicalJson(fullSnapshot)));
    expect(new TextEncoder().encode(JSON.stringify(approval.snapshot)).length).toBeLessThanOrEqual(4096);
    const bytesNotStored = approval.snapshot.truncated?.bytesNotStored ?? 0;
    expect(bytesNotStored).toBeGreaterThan(95_000);
    expect((approval.snapshot.toolCall.rawInput as { path: string }).path).toBe("/src/big.txt");

    // The gate's own row holds the cut snapshot too.
    const stored = await runInDurableObject(gateStub(owner.teamId, sessionId), (_: SessionGate, state) => {
      return state.storage.sql.exec("SELECT record FROM approvals WHERE id = ?", approvalId).one().record as string;
    });
    expect(stored.length).toBeLessThan(6000);

    // Only what was shown can be allowed: no one saw the cut part.
    const allow = await decide(owner, approval, "allow");
    expect(allow.status).toBe(409);
    expect(await json(allow)).toMatchObject({ error: "request_truncated" });
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(1);
    expect((await decide(owner, approval, "deny")).status).toBe(200);
    expect(await settled(owner, approvalId)).toMatchObject({
      state: "denied",
      snapshot: { truncated: { bytesNotStored } },
    });
    // The record says the decider saw a cut card.
    await flush(owner.teamId, sessionId);
    const decided = await env.DB.prepare("SELECT detail FROM audit_log WHERE event_id = ?")
      .bind(`${approvalId}:approval.denied`)
      .first<{ detail: string }>();
    expect(JSON.parse(decided?.detail as string)).toMatchObject({ truncated: bytesNotStored });
  });
});

describe("stored bytes by default", () => {
  it("a typical 64 KiB file write (old and new text on the card) is stored whole, and can be allowed", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("write");
    const source = (tag: string) =>
      Array.from({ length: 1_600 }, (_, i) => `export const ${tag}${i} = "value ${i}"; // line\n`)
        .join("")
        .slice(0, 64 * 1024);
    const [oldText, newText] = [source("old"), source("new")];
    const toolCall = {
      toolCallId: "write-64k",
      title: "Write: src/big.ts",
      kind: "edit" as const,
      content: [{ type: "diff", path: "/repo/src/big.ts", oldText, newText }],
      locations: [{ path: "/repo/src/big.ts" }],
      rawInput: { file_path: "/repo/src/big.ts", content: newText },
    };
    const created = await askHttp(key, sessionId, permissionParams(sessionId, { toolCall }));
    expect(created.status).toBe(201);
    const [approval] = (await pendingApprovals(owner, sessionId)) as [Approval];
    expect(approval.snapshot.truncated).toBeUndefined();
    expect((approval.snapshot.toolCall.rawInput as { content: string }).content).toBe(newText);
    expect((await decide(owner, approval, "allow")).status).toBe(200);
  });
});

describe("retention", () => {
  it("the scheduled run prunes approvals and idle sessions past the team's retention, never the audit log", async () => {
    const owner = await signUp();
    await setLimits(owner, { retentionDays: 30 });
    const now = Date.now();
    const [oldId, recentId] = await seedApprovals(owner.teamId, [
      { ownerUserId: owner.userId, state: "denied", createdAt: now - 40 * DAY, sessionId: "old-session" },
      { ownerUserId: owner.userId, state: "allowed", createdAt: now - 20 * DAY, sessionId: "recent-session" },
    ]);
    await env.DB.batch(
      [
        ["old-session", now - 40 * DAY],
        ["recent-session", now - 20 * DAY],
        ["idle-session", now - 31 * DAY],
      ].map(([id, at]) =>
        env.DB.prepare(
          "INSERT INTO agent_sessions (team_id, session_id, owner_user_id, last_seen_at) VALUES (?, ?, ?, ?)",
        ).bind(owner.teamId, id, owner.userId, at),
      ),
    );
    const auditBefore = await env.DB.prepare("SELECT COUNT(*) AS n FROM audit_log WHERE team_id = ?")
      .bind(owner.teamId)
      .first<{ n: number }>();
    // Only this test's team is due: the others were pruned just now.
    await env.DB.prepare("UPDATE teams SET pruned_at = ? WHERE id <> ?").bind(now, owner.teamId).run();

    const ctx = createExecutionContext();
    worker.scheduled({ scheduledTime: now, cron: "17 * * * *", noRetry() {} }, env as unknown as WorkerEnv, ctx);
    await waitOnExecutionContext(ctx);

    const approvals = await env.DB.prepare("SELECT id FROM approvals WHERE team_id = ?").bind(owner.teamId).all();
    expect(approvals.results.map((r) => r.id)).toEqual([recentId]);
    expect(approvals.results.map((r) => r.id)).not.toContain(oldId);
    const sessions = await env.DB.prepare("SELECT session_id FROM agent_sessions WHERE team_id = ?")
      .bind(owner.teamId)
      .all();
    expect(sessions.results.map((r) => r.session_id)).toEqual(["recent-session"]);
    const auditAfter = await env.DB.prepare("SELECT COUNT(*) AS n FROM audit_log WHERE team_id = ?")
      .bind(owner.teamId)
      .first<{ n: number }>();
    expect(auditAfter?.n).toBe(auditBefore?.n);
    expect(await json(await api("/v1/audit/verify", { cookie: owner.cookie }))).toMatchObject({ ok: true });
    const team = await env.DB.prepare("SELECT pruned_at FROM teams WHERE id = ?").bind(owner.teamId).first();
    expect(team?.pruned_at).toBe(now);
  });

  it("a gate prunes its resolved rows past retention on its alarm, and sets the alarm for it", async () => {
    const owner = await signUp();
    await setLimits(owner, { retentionDays: 1 });
    const { key } = await createKey(owner);
    const sessionId = unique("gate-retention");
    const { approvalId } = await json<{ approvalId: string }>(await askHttp(key, sessionId));
    await api(`/v1/agent/approvals/${approvalId}`, { method: "DELETE", headers: { Authorization: `Bearer ${key}` } });
    await flush(owner.teamId, sessionId);

    const stub = gateStub(owner.teamId, sessionId);
    // The alarm set while the request was pending runs; with nothing else due, the next one is for retention.
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const { expiresAt, alarm } = await runInDurableObject(stub, async (_: SessionGate, state) => ({
      expiresAt: state.storage.sql.exec("SELECT expires_at FROM approvals WHERE id = ?", approvalId).one()
        .expires_at as number,
      alarm: await state.storage.getAlarm(),
    }));
    expect(alarm).toBe(expiresAt + DAY);

    await runInDurableObject(stub, (gate: SessionGate) => gate.sweep(expiresAt + DAY - 1));
    expect(await rowCount(stub, approvalId)).toBe(1);
    await runInDurableObject(stub, (gate: SessionGate) => gate.sweep(expiresAt + DAY + 1));
    expect(await rowCount(stub, approvalId)).toBe(0);
  });

  it("after a prune, the gate's retention alarm is for the next resolved row", async () => {
    const owner = await signUp();
    await setLimits(owner, { retentionDays: 1 });
    const { key } = await createKey(owner);
    const sessionId = unique("gate-retention-next");
    const shortLived = { _meta: { tapgate: { timeoutMs: 60_000 } } };
    const ids: string[] = [];
    for (const params of [permissionParams(sessionId, shortLived), permissionParams(sessionId)]) {
      const { approvalId } = await json<{ approvalId: string }>(await askHttp(key, sessionId, params));
      await api(`/v1/agent/approvals/${approvalId}`, { method: "DELETE", headers: { Authorization: `Bearer ${key}` } });
      ids.push(approvalId);
    }
    await flush(owner.teamId, sessionId);
    const [first, second] = ids as [string, string];
    const stub = gateStub(owner.teamId, sessionId);
    const expiry = (id: string) =>
      runInDurableObject(
        stub,
        (_: SessionGate, state) =>
          state.storage.sql.exec("SELECT expires_at FROM approvals WHERE id = ?", id).one().expires_at as number,
      );
    const [firstExpiry, secondExpiry] = [await expiry(first), await expiry(second)];
    expect(firstExpiry).toBeLessThan(secondExpiry);

    await runInDurableObject(stub, (gate: SessionGate) => gate.sweep(firstExpiry + DAY + 1));
    expect(await rowCount(stub, first)).toBe(0);
    expect(await rowCount(stub, second)).toBe(1);
    // The alarm that was due for the first row comes early for the second: it sets the next one.
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const alarm = await runInDurableObject(stub, (_: SessionGate, state) => state.storage.getAlarm());
    expect(alarm).toBe(secondExpiry + DAY);
  });
});

function rowCount(stub: ReturnType<typeof gateStub>, approvalId: string): Promise<number> {
  return runInDurableObject(stub, (_: SessionGate, state) => {
    return state.storage.sql.exec("SELECT COUNT(*) AS n FROM approvals WHERE id = ?", approvalId).one().n as number;
  });
}

/** The release rides on the gate's background news to the hub: wait until the hub counts `n`. */
async function waitForHubPending(teamId: string, n: number): Promise<void> {
  await vi.waitFor(
    async () => {
      const pending = await runInDurableObject(hubStub(teamId), (hub: TeamHub) => hub.quotaPending());
      if (pending !== n) throw new Error(`hub counts ${pending}`);
    },
    { timeout: 5_000, interval: 10 },
  );
}
