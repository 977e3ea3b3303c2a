/** Tenant isolation on every dashboard route: another team's ids answer 404 and change nothing. */
import { describe, expect, it } from "vitest";
import { DEFAULT_POLICY } from "../../worker/policy";
import { api, askOnce, json, pendingApprovals, previewInvite, signUp, tokenOf } from "./helpers";
import { addMember, seedApprovals } from "./team-helpers";

describe("dashboard tenant isolation", () => {
  it("another team's member, invite, key, session and team ids answer 404; lists hold only the caller's team", async () => {
    const a = await askOnce();
    const aMember = await addMember(a.owner, "approver");
    const made = await api("/v1/invites", { method: "POST", cookie: a.owner.cookie, body: '{"role":"viewer"}' });
    const aInvite = await json<{ id: string; url: string }>(made);
    await seedApprovals(a.owner.teamId, [
      { ownerUserId: a.owner.userId, state: "allowed", createdAt: Date.now() - 1000, sessionId: a.sessionId },
    ]);
    const b = await signUp("Mallory");
    const asB = (path: string, init: RequestInit = {}) => api(path, { ...init, cookie: b.cookie });

    const byId = [
      await asB(`/v1/members/${aMember.userId}`, { method: "PATCH", body: '{"role":"viewer"}' }),
      await asB(`/v1/members/${aMember.userId}`, { method: "DELETE" }),
      await asB(`/v1/members/${a.owner.userId}`, { method: "DELETE" }),
      await asB(`/v1/invites/${aInvite.id}`, { method: "DELETE" }),
      await asB(`/v1/keys/${a.keyId}`, { method: "DELETE" }),
      await asB(`/v1/sessions/${a.sessionId}`),
      await asB("/v1/teams/switch", { method: "POST", body: JSON.stringify({ teamId: a.owner.teamId }) }),
    ];
    expect(byId.map((r) => r.status)).toEqual([404, 404, 404, 404, 404, 404, 404]);

    const list = async <T>(path: string, field: string) => (await json<Record<string, T[]>>(await asB(path)))[field];
    expect(await list("/v1/members", "members")).toEqual([expect.objectContaining({ userId: b.userId })]);
    expect(await list("/v1/invites", "invites")).toEqual([]);
    expect(await list("/v1/keys?scope=team", "keys")).toEqual([]);
    expect(await list("/v1/sessions?state=recent", "sessions")).toEqual([]);
    expect(await list(`/v1/history?session=${a.sessionId}`, "approvals")).toEqual([]);
    expect(await list(`/v1/history?member=${a.owner.userId}`, "approvals")).toEqual([]);
    expect(await list("/v1/history/export?format=json", "approvals")).toEqual([]);
    expect(await (await asB("/v1/history/export?format=csv")).text()).not.toContain(a.owner.userId);
    const audit = await list<{ teamId: string }>("/v1/audit", "entries");
    // B's own team has events (its creation, B's sign-in), and only those.
    expect(audit?.length).toBeGreaterThan(0);
    expect(new Set(audit?.map((e) => e.teamId))).toEqual(new Set([b.teamId]));
    const stats = await json<{ latency: { count: number } }>(await asB("/v1/stats?days=30"));
    expect(stats.latency.count).toBe(0);
    expect((await json<{ teams: Array<{ id: string }> }>(await asB("/v1/teams"))).teams.map((t) => t.id)).toEqual([
      b.teamId,
    ]);
    expect((await asB("/v1/policy", { method: "PUT", body: '{"onceOnlyOptions":false}' })).status).toBe(200);

    // Nothing changed for team A.
    const members = await json<{ members: Array<{ userId: string; role: string }> }>(
      await api("/v1/members", { cookie: a.owner.cookie }),
    );
    expect(members.members).toContainEqual(expect.objectContaining({ userId: aMember.userId, role: "approver" }));
    expect((await previewInvite(tokenOf(aInvite.url))).status).toBe(200);
    const keys = await json<{ keys: Array<{ id: string; revokedAt: number | null }> }>(
      await api("/v1/keys", { cookie: a.owner.cookie }),
    );
    expect(keys.keys.find((k) => k.id === a.keyId)?.revokedAt).toBeNull();
    expect(await pendingApprovals(a.owner, a.sessionId)).toHaveLength(1);
    expect(await json(await api("/v1/policy", { cookie: a.owner.cookie }))).toEqual(DEFAULT_POLICY);
    expect(await json(await api("/v1/me", { cookie: aMember.cookie }))).toMatchObject({ team: { id: a.owner.teamId } });
    expect(await json(await api("/v1/audit/verify", { cookie: a.owner.cookie }))).toMatchObject({ ok: true });
  });
});
