import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { api, askOnce, connectAgent, json, type Member, outbox, signUp, tokenOf } from "./helpers";
import { addMember, openLive } from "./team-helpers";

async function invite(by: Member, role: string, email?: string) {
  const response = await api("/v1/invites", {
    method: "POST",
    cookie: by.cookie,
    body: JSON.stringify({ role, email }),
  });
  return { response, body: await json<{ id: string; url: string; role: string; expiresAt: number }>(response) };
}

const accept = (m: Member, token: string) =>
  api("/v1/invites/accept", { method: "POST", cookie: m.cookie, body: JSON.stringify({ token }) });

const me = async (m: Member) => json<{ team: { id: string }; role: string }>(await api("/v1/me", { cookie: m.cookie }));

describe("invites", () => {
  it("a one-time link adds the invitee with the chosen role and switches them to the team", async () => {
    const owner = await signUp("Olga");
    const { response, body } = await invite(owner, "approver");
    expect(response.status).toBe(201);
    expect(body.url).toMatch(/\/invite\?token=[A-Za-z0-9_-]{43}$/);
    expect(body.expiresAt - Date.now()).toBeGreaterThan(7 * 86_400_000 - 60_000);
    const token = tokenOf(body.url);

    const preview = await api(`/v1/invites/preview?token=${token}`);
    expect(await json(preview)).toMatchObject({
      team: { name: "Olga's team" },
      role: "approver",
      invitedBy: { name: "Olga" },
    });
    const listed = await json<{ invites: Array<{ id: string; createdBy: { name: string } }> }>(
      await api("/v1/invites", { cookie: owner.cookie }),
    );
    expect(listed.invites).toEqual([
      expect.objectContaining({ id: body.id, createdBy: expect.objectContaining({ name: "Olga" }) }),
    ]);

    const bob = await signUp("Bob");
    expect((await accept(bob, token)).status).toBe(200);
    expect(await me(bob)).toMatchObject({ team: { id: owner.teamId }, role: "approver" });
    const teams = await json<{ teams: Array<{ id: string; role: string }> }>(
      await api("/v1/teams", { cookie: bob.cookie }),
    );
    expect(teams.teams.map((t) => t.role).sort()).toEqual(["approver", "owner"]);
    const members = await json<{ members: Array<{ userId: string; role: string }> }>(
      await api("/v1/members", { cookie: owner.cookie }),
    );
    expect(members.members).toContainEqual(expect.objectContaining({ userId: bob.userId, role: "approver" }));

    // Single use: the link is spent for everyone, and the preview no longer answers.
    const carol = await signUp("Carol");
    expect((await accept(carol, token)).status).toBe(404);
    expect((await api(`/v1/invites/preview?token=${token}`)).status).toBe(404);
    expect((await json<{ invites: unknown[] }>(await api("/v1/invites", { cookie: owner.cookie }))).invites).toEqual(
      [],
    );
  });

  it("a member cannot use an invite to their own team again (409), and the link stays usable", async () => {
    const owner = await signUp("Olga");
    const { body } = await invite(owner, "viewer");
    const answer = await accept(owner, tokenOf(body.url));
    expect(answer.status).toBe(409);
    expect(await json(answer)).toMatchObject({ error: "already_member" });
    expect((await api(`/v1/invites/preview?token=${tokenOf(body.url)}`)).status).toBe(200);
  });

  it("expired and revoked links do nothing", async () => {
    const owner = await signUp("Olga");
    const expired = await invite(owner, "viewer");
    await env.DB.prepare("UPDATE invites SET expires_at = ? WHERE id = ?")
      .bind(Date.now() - 1, expired.body.id)
      .run();
    const revoked = await invite(owner, "viewer");
    expect((await api(`/v1/invites/${revoked.body.id}`, { method: "DELETE", cookie: owner.cookie })).status).toBe(200);
    const bob = await signUp("Bob");
    for (const { body } of [expired, revoked]) {
      expect((await accept(bob, tokenOf(body.url))).status).toBe(404);
      expect((await api(`/v1/invites/preview?token=${tokenOf(body.url)}`)).status).toBe(404);
    }
    expect(await me(bob)).toMatchObject({ team: { id: bob.teamId } });
  });

  it("mails the link when an address is given, and nobody grants a role above their own", async () => {
    const owner = await signUp("Olga");
    const admin = await addMember(owner, "admin");
    const mailed = await invite(owner, "admin", "New.Person@Example.com");
    expect(mailed.response.status).toBe(201);
    const { messages } = await json<{ messages: Array<{ link: string }> }>(await outbox("new.person@example.com"));
    expect(messages.at(-1)?.link).toBe(mailed.body.url);
    expect((await invite(admin, "owner")).response.status).toBe(403);
    expect((await invite(admin, "admin")).response.status).toBe(201);
    expect((await invite(owner, "owner")).response.status).toBe(201);
  });
});

describe("roles and removal", () => {
  it("changes roles within the rules; the last owner cannot step down (409 last_owner)", async () => {
    const owner = await signUp("Olga");
    const admin = await addMember(owner, "admin");
    const viewer = await addMember(owner, "viewer");
    const patch = (by: Member, target: Member, role: string) =>
      api(`/v1/members/${target.userId}`, { method: "PATCH", cookie: by.cookie, body: JSON.stringify({ role }) });

    expect((await patch(admin, viewer, "approver")).status).toBe(200);
    expect((await patch(admin, viewer, "owner")).status).toBe(403);
    expect((await patch(admin, owner, "viewer")).status).toBe(403);
    const last = await patch(owner, owner, "admin");
    expect(last.status).toBe(409);
    expect(await json(last)).toMatchObject({ error: "last_owner" });
    expect((await api(`/v1/members/${owner.userId}`, { method: "DELETE", cookie: owner.cookie })).status).toBe(409);

    expect((await patch(owner, admin, "owner")).status).toBe(200);
    expect((await patch(owner, owner, "viewer")).status).toBe(200); // another owner remains
    expect(await me(owner)).toMatchObject({ role: "viewer" });
    const audit = await json<{ entries: Array<{ action: string; detail: { after?: string } }> }>(
      await api("/v1/audit", { cookie: admin.cookie }),
    );
    expect(audit.entries.filter((e) => e.action === "member.role_changed")).toHaveLength(3);
  });

  it("removing a member ends their sessions and live sockets, revokes their keys and denies their requests", async () => {
    const owner = await signUp("Olga");
    const bob = await addMember(owner, "approver", "Bob");
    const asked = await askOnce(bob);
    const feed = await openLive(bob);
    const closed = new Promise<CloseEvent>((resolve) => feed.ws.addEventListener("close", resolve));

    const removed = await api(`/v1/members/${bob.userId}`, { method: "DELETE", cookie: owner.cookie });
    expect(removed.status).toBe(200);

    expect((await api("/v1/me", { cookie: bob.cookie })).status).toBe(401);
    expect((await closed).code).toBe(4003);
    const answer = await asked.agent.next<{ result: unknown }>();
    expect(answer.result).toEqual(expect.objectContaining({ outcome: { outcome: "selected", optionId: "deny" } }));
    const read = await json<Approval>(await api(`/v1/approvals/${asked.approval.id}`, { cookie: owner.cookie }));
    expect(read).toMatchObject({ state: "denied", reason: "key_revoked" });
    await expect(connectAgent(asked.key, asked.sessionId)).rejects.toThrow(/401/);
    const members = await json<{ members: Array<{ userId: string }> }>(
      await api("/v1/members", { cookie: owner.cookie }),
    );
    expect(members.members.map((m) => m.userId)).not.toContain(bob.userId);
  });

  it("anyone may leave; a viewer or approver may not remove others (403)", async () => {
    const owner = await signUp("Olga");
    const viewer = await addMember(owner, "viewer");
    const approver = await addMember(owner, "approver");
    expect((await api(`/v1/members/${viewer.userId}`, { method: "DELETE", cookie: approver.cookie })).status).toBe(403);
    expect((await api(`/v1/members/${approver.userId}`, { method: "DELETE", cookie: viewer.cookie })).status).toBe(403);
    expect((await api(`/v1/members/${viewer.userId}`, { method: "DELETE", cookie: viewer.cookie })).status).toBe(200);
    expect((await api("/v1/me", { cookie: viewer.cookie })).status).toBe(401);
  });
});

describe("several teams", () => {
  it("creates another team, lists both, and switches between them", async () => {
    const ada = await signUp("Ada");
    const created = await api("/v1/teams", {
      method: "POST",
      cookie: ada.cookie,
      body: JSON.stringify({ name: "Side project" }),
    });
    expect(created.status).toBe(201);
    const { team } = await json<{ team: { id: string } }>(created);
    expect(await me(ada)).toMatchObject({ team: { id: team.id }, role: "owner" });
    const { teams } = await json<{ teams: Array<{ id: string; name: string; role: string }> }>(
      await api("/v1/teams", { cookie: ada.cookie }),
    );
    expect(teams.map((t) => t.id).sort()).toEqual([ada.teamId, team.id].sort());

    const back = await api("/v1/teams/switch", {
      method: "POST",
      cookie: ada.cookie,
      body: JSON.stringify({ teamId: ada.teamId }),
    });
    expect(back.status).toBe(200);
    expect(await me(ada)).toMatchObject({ team: { id: ada.teamId } });

    const stranger = await signUp("Mallory");
    const foreign = await api("/v1/teams/switch", {
      method: "POST",
      cookie: stranger.cookie,
      body: JSON.stringify({ teamId: ada.teamId }),
    });
    expect(foreign.status).toBe(404);
    expect(await me(stranger)).toMatchObject({ team: { id: stranger.teamId } });
  });
});
