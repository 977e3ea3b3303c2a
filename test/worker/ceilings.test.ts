/**
 * The operator's ceilings (issue 31, worker/ceilings.ts): deployment settings that bound what
 * one tenant takes of the shared service, whatever its owners choose: keys per team, teams per
 * person, members per team, retention, stored bytes per team per day.
 */
import { createExecutionContext, env, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { RPC_ERROR } from "../../sdk/src/protocol";
import { ceilingsOf } from "../../worker/ceilings";
import type { TeamHub } from "../../worker/hub/team-hub";
import app from "../../worker/index";
import { DEFAULT_POLICY } from "../../worker/policy";
import type { Env as WorkerEnv } from "../../worker/types";
import {
  api,
  connectAgent,
  createKey,
  hubStub,
  json,
  type Member,
  ORIGIN,
  permissionParams,
  signUp,
  tokenOf,
  unique,
} from "./helpers";
import { addMember, seedApprovals } from "./team-helpers";

const DAY = 24 * 60 * 60 * 1000;

/** The Worker with other ceilings than the suite's (wrangler.toml's defaults), as a signed-in browser calls it. */
function withCeilings(vars: Partial<WorkerEnv>, path: string, m: Member, init: RequestInit = {}) {
  const headers = new Headers(init.headers);
  headers.set("Cookie", m.cookie);
  headers.set("CF-Connecting-IP", "10.31.0.1");
  if (init.body !== undefined) headers.set("Content-Type", "application/json");
  if (init.method && init.method !== "GET") headers.set("Origin", ORIGIN);
  return app.request(`${ORIGIN}${path}`, { ...init, headers }, { ...env, ...vars }, createExecutionContext());
}

const post = (body: unknown): RequestInit => ({ method: "POST", body: JSON.stringify(body) });

describe("operator ceilings", () => {
  it("API keys per team: the next key is 429 quota_exceeded {limit: keysPerTeam}; a key revoked today still counts", async () => {
    const owner = await signUp("Keys");
    const vars = { MAX_KEYS_PER_TEAM: "2" };
    expect((await withCeilings(vars, "/v1/keys", owner, post({ label: "one" }))).status).toBe(201);
    const second = await json<{ id: string }>(await withCeilings(vars, "/v1/keys", owner, post({ label: "two" })));
    const over = await withCeilings(vars, "/v1/keys", owner, post({ label: "three" }));
    expect(over.status).toBe(429);
    expect(await json(over)).toMatchObject({ error: "quota_exceeded", limit: "keysPerTeam", ceiling: 2 });

    // Revoking does not free a slot made today: making and revoking keys in a loop is bounded too.
    expect((await api(`/v1/keys/${second.id}`, { method: "DELETE", cookie: owner.cookie })).status).toBe(200);
    expect((await withCeilings(vars, "/v1/keys", owner, post({ label: "four" }))).status).toBe(429);
    // A day later the revoked key no longer counts.
    await env.DB.prepare("UPDATE api_keys SET created_at = created_at - ? WHERE id = ?").bind(DAY, second.id).run();
    expect((await withCeilings(vars, "/v1/keys", owner, post({ label: "five" }))).status).toBe(201);
  });

  it("API keys per team: a device-code login past the ceiling answers 429 and keeps the code", async () => {
    const owner = await signUp("Device");
    const vars = { MAX_KEYS_PER_TEAM: "1" };
    await createKey(owner);
    const started = await json<{ deviceCode: string; userCode: string }>(
      await api("/v1/device/code", post({ clientName: "laptop" })),
    );
    const approved = await api(`/v1/device/${started.userCode}/approve`, { method: "POST", cookie: owner.cookie });
    expect(approved.status).toBe(200);
    const token = (vars: Partial<WorkerEnv>) =>
      app.request(
        `${ORIGIN}/v1/device/token`,
        {
          ...post({ deviceCode: started.deviceCode }),
          headers: { "Content-Type": "application/json", "CF-Connecting-IP": "10.31.0.2" },
        },
        { ...env, ...vars },
        createExecutionContext(),
      );
    const over = await token(vars);
    expect(over.status).toBe(429);
    expect(await json(over)).toMatchObject({ error: "quota_exceeded", limit: "keysPerTeam" });
    const keys = await env.DB.prepare("SELECT COUNT(*) AS n FROM api_keys WHERE team_id = ?")
      .bind(owner.teamId)
      .first<{ n: number }>();
    expect(keys?.n).toBe(1);
    // The code was not spent: under a higher ceiling the same code yields its key.
    expect((await token({ MAX_KEYS_PER_TEAM: "2" })).status).toBe(200);
  });

  it("teams a person may create: the sign-up's team counts; the next is 429 {limit: teamsPerPerson}", async () => {
    const owner = await signUp("Teams");
    const vars = { MAX_TEAMS_PER_PERSON: "2" };
    expect((await withCeilings(vars, "/v1/teams", owner, post({ name: "Second" }))).status).toBe(201);
    const over = await withCeilings(vars, "/v1/teams", owner, post({ name: "Third" }));
    expect(over.status).toBe(429);
    expect(await json(over)).toMatchObject({ error: "quota_exceeded", limit: "teamsPerPerson", ceiling: 2 });
    const made = await env.DB.prepare("SELECT COUNT(*) AS n FROM teams WHERE created_by = ?")
      .bind(owner.userId)
      .first<{ n: number }>();
    expect(made?.n).toBe(2);
    // Parallel creations cannot pass it either: the count is in the statement that inserts.
    const racing = await Promise.all(
      [1, 2, 3].map((n) => withCeilings({ MAX_TEAMS_PER_PERSON: "3" }, "/v1/teams", owner, post({ name: `R${n}` }))),
    );
    expect(racing.map((r) => r.status).sort()).toEqual([201, 429, 429]);
  });

  it("members per team: joining a full team is 429 {limit: membersPerTeam}, and the invite stays unused", async () => {
    const owner = await signUp("Full");
    await addMember(owner, "approver");
    const made = await api("/v1/invites", { ...post({ role: "viewer" }), cookie: owner.cookie });
    expect(made.status).toBe(201);
    const token = tokenOf((await json<{ url: string }>(made)).url);
    const joiner = await signUp("Joiner");
    const vars = { MAX_MEMBERS_PER_TEAM: "2" };
    const over = await withCeilings(vars, "/v1/invites/accept", joiner, post({ token }));
    expect(over.status).toBe(429);
    expect(await json(over)).toMatchObject({ error: "quota_exceeded", limit: "membersPerTeam", ceiling: 2 });
    expect(
      (await withCeilings({ MAX_MEMBERS_PER_TEAM: "3" }, "/v1/invites/accept", joiner, post({ token }))).status,
    ).toBe(200);
  });

  it("retention: owners choose at most the ceiling (400 over_ceiling), and pruning keeps no more than it", async () => {
    const owner = await signUp("Retention");
    const limits = (retentionDays: number) => ({
      ...DEFAULT_POLICY,
      limits: { ...DEFAULT_POLICY.limits, retentionDays },
    });
    const put = (vars: Partial<WorkerEnv>, days: number) =>
      withCeilings(vars, "/v1/policy", owner, { method: "PUT", body: JSON.stringify(limits(days)) });
    const over = await put({}, 91);
    expect(over.status).toBe(400);
    expect(await json(over)).toMatchObject({ error: "over_ceiling", limit: "retentionDays", ceiling: 90 });
    expect((await put({}, 90)).status).toBe(200);
    expect((await put({ MAX_RETENTION_DAYS: "30" }, 31)).status).toBe(400);

    // A team's 90 days, stored before the operator lowered the ceiling to 10: pruned at 10.
    const now = Date.now();
    const [oldId, recentId] = await seedApprovals(owner.teamId, [
      { ownerUserId: owner.userId, state: "denied", createdAt: now - 20 * DAY, sessionId: "old" },
      { ownerUserId: owner.userId, state: "allowed", createdAt: now - 5 * DAY, sessionId: "recent" },
    ]);
    await env.DB.prepare("UPDATE teams SET pruned_at = ? WHERE id <> ?").bind(now, owner.teamId).run();
    const ctx = createExecutionContext();
    app.scheduled(
      { scheduledTime: now, cron: "17 * * * *", noRetry() {} },
      { ...env, MAX_RETENTION_DAYS: "10" } as unknown as WorkerEnv,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    const left = await env.DB.prepare("SELECT id FROM approvals WHERE team_id = ?").bind(owner.teamId).all();
    expect(left.results.map((r) => r.id)).toEqual([recentId]);
    expect(left.results.map((r) => r.id)).not.toContain(oldId);
  });

  it("stored bytes per team per day: past it, -32001 {reason: quota} on the socket and 429 over HTTP, until tomorrow", async () => {
    const owner = await signUp("Bytes");
    const { key } = await createKey(owner);
    const sessionId = unique("bytes");
    const ceiling = ceilingsOf(env as unknown as WorkerEnv).storedBytesPerTeamPerDay;
    // Today's count for the team, 10 bytes under the ceiling: the next request passes it.
    await runInDurableObject(hubStub(owner.teamId), (_: TeamHub, state) => {
      const day = Math.floor(Date.now() / DAY);
      state.storage.sql.exec("INSERT OR REPLACE INTO quota_days (day, bytes) VALUES (?, ?)", day, ceiling - 10);
    });
    const agent = await connectAgent(key, sessionId);
    await agent.ask(2, permissionParams(sessionId));
    const refused = await agent.next<{ error: { code: number; data: Record<string, unknown> } }>();
    expect(refused.error.code).toBe(RPC_ERROR.tooManyPending);
    expect(refused.error.data).toMatchObject({ reason: "quota", limit: "storedBytesPerTeamPerDay" });
    const tomorrow = (Math.floor(Date.now() / DAY) + 1) * DAY;
    expect(refused.error.data.retryAfterMs).toBeGreaterThan(0);
    expect(refused.error.data.retryAfterMs).toBeLessThanOrEqual(tomorrow - Date.now() + 1_000);

    const httpSession = unique("bytes-http");
    const http = await api(`/v1/agent/sessions/${httpSession}/permissions`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}` },
      body: JSON.stringify(permissionParams(httpSession)),
    });
    expect(http.status).toBe(429);
    expect(await json(http)).toMatchObject({ error: "quota_exceeded", limit: "storedBytesPerTeamPerDay" });
    agent.ws.close();
  });
});
