import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { removeMember as removeMemberRows } from "../../worker/db";
import {
  api,
  askOnce,
  connectAgent,
  createKey,
  decide,
  hubStub,
  json,
  type Member,
  ORIGIN,
  outbox,
  previewInvite,
  settled,
  signUp,
  tokenOf,
  unique,
} from "./helpers";
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

    // The token never rides in a URL (request URLs are what logs keep): a GET previews nothing
    // (it meets the admin routes' sign-in check).
    expect((await api(`/v1/invites/preview?token=${token}`)).status).toBe(401);
    const preview = await previewInvite(token);
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
    expect((await previewInvite(token)).status).toBe(404);
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
    expect((await previewInvite(tokenOf(body.url))).status).toBe(200);
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
      expect((await previewInvite(tokenOf(body.url))).status).toBe(404);
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

describe("invites carry their maker's authority and address", () => {
  const patch = (by: Member, target: Member, role: string) =>
    api(`/v1/members/${target.userId}`, { method: "PATCH", cookie: by.cookie, body: JSON.stringify({ role }) });

  it("an invite whose maker was demoted below its role, or removed, answers 404", async () => {
    const owner = await signUp("Olga");
    const admin = await addMember(owner, "admin", "Adam");
    const kept = await invite(admin, "approver");
    const demoted = await invite(admin, "admin");
    const removed = await addMember(owner, "admin", "Rita");
    const orphaned = await invite(removed, "viewer");
    expect([kept, demoted, orphaned].map((i) => i.response.status)).toEqual([201, 201, 201]);

    expect((await patch(owner, admin, "approver")).status).toBe(200);
    expect((await api(`/v1/members/${removed.userId}`, { method: "DELETE", cookie: owner.cookie })).status).toBe(200);

    const bob = await signUp("Bob");
    for (const dead of [kept, demoted, orphaned]) {
      // An approver may not invite at all: every invite Adam made is dead now, like Rita's.
      expect((await previewInvite(tokenOf(dead.body.url))).status).toBe(404);
      expect((await accept(bob, tokenOf(dead.body.url))).status).toBe(404);
    }
    expect(await me(bob)).toMatchObject({ team: { id: bob.teamId } });
    expect((await json<{ invites: unknown[] }>(await api("/v1/invites", { cookie: owner.cookie }))).invites).toEqual(
      [],
    );

    // Promoted back, the maker's invites work again (they were never spent).
    expect((await patch(owner, admin, "admin")).status).toBe(200);
    expect((await accept(bob, tokenOf(demoted.body.url))).status).toBe(200);
    expect(await me(bob)).toMatchObject({ team: { id: owner.teamId }, role: "admin" });
  });

  it("an invite with an address is for that address only (403 invite_for_other_address)", async () => {
    const owner = await signUp("Olga");
    const bob = await signUp("Bob");
    const mallory = await signUp("Mallory");
    const { body } = await invite(owner, "approver", bob.email.toUpperCase());
    const stolen = await accept(mallory, tokenOf(body.url));
    expect(stolen.status).toBe(403);
    expect(await json(stolen)).toMatchObject({ error: "invite_for_other_address" });
    expect(await me(mallory)).toMatchObject({ team: { id: mallory.teamId } });
    expect((await accept(bob, tokenOf(body.url))).status).toBe(200);
    expect(await me(bob)).toMatchObject({ team: { id: owner.teamId }, role: "approver" });
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

  it("a removal made elsewhere applies at once, though this isolate still caches the session", async () => {
    const owner = await signUp("Olga");
    const bob = await addMember(owner, "approver", "Bob");
    const { key } = await createKey(bob);
    const { approval } = await askOnce(owner);
    // Cached here now; the removal below goes to D1 and then the team's hub, as another isolate's would.
    expect((await api("/v1/me", { cookie: bob.cookie })).status).toBe(200);
    await env.DB.prepare("DELETE FROM memberships WHERE team_id = ? AND user_id = ?")
      .bind(owner.teamId, bob.userId)
      .run();
    await hubStub(owner.teamId).forgetDirectory();

    const live = await SELF.fetch(`${ORIGIN}/v1/live`, {
      headers: { Upgrade: "websocket", Origin: ORIGIN, Cookie: bob.cookie },
    });
    expect(live.status).toBe(401);
    expect(live.webSocket).toBeNull();
    const minted = await api("/v1/keys", { method: "POST", cookie: bob.cookie, body: JSON.stringify({ label: "x" }) });
    expect(minted.status).toBe(401);
    // The key is not revoked yet, but its user is no longer a member: it joins nothing.
    await expect(connectAgent(key, unique("sess"))).rejects.toThrow(/401/);
    const poll = await api("/v1/agent/me", { headers: { Authorization: `Bearer ${key}` } });
    expect(poll.status).toBe(401);
    expect((await decide(bob, approval, "allow")).status).toBe(401);
    expect(await json<Approval>(await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }))).toMatchObject({
      state: "pending",
    });
  });

  it("removing twice is the same success, and the retry finishes a removal that stopped half-way", async () => {
    const owner = await signUp("Olga");
    const bob = await addMember(owner, "approver", "Bob");
    const asked = await askOnce(bob);
    // The removal's batch ran (membership gone, keys revoked in D1) but nothing after it did:
    // no gate was told, nothing was audited.
    const batch = await removeMemberRows(env.DB, {
      teamId: owner.teamId,
      userId: bob.userId,
      left: false,
      now: Date.now(),
    });
    expect(batch).not.toBeNull();
    expect((await api(`/v1/approvals/${asked.approval.id}`, { cookie: owner.cookie }).then(json)).state).toBe(
      "pending",
    );

    const retry = await api(`/v1/members/${bob.userId}`, { method: "DELETE", cookie: owner.cookie });
    expect(retry.status).toBe(200);
    expect(await json(retry)).toEqual({ ok: true, userId: bob.userId });
    expect(await settled(owner, asked.approval.id)).toMatchObject({ state: "denied", reason: "key_revoked" });

    const again = await api(`/v1/members/${bob.userId}`, { method: "DELETE", cookie: owner.cookie });
    expect(again.status).toBe(200);
    const { results } = await env.DB.prepare(
      "SELECT detail FROM audit_log WHERE team_id = ? AND action = 'member.removed' AND subject = ?",
    )
      .bind(owner.teamId, bob.userId)
      .all<{ detail: string }>();
    expect(results.map((r) => JSON.parse(r.detail))).toEqual([{ role: "approver", left: false, revokedKeys: 1 }]);

    // Someone who was never in the team is still unknown.
    const stranger = await signUp("Sam");
    expect((await api(`/v1/members/${stranger.userId}`, { method: "DELETE", cookie: owner.cookie })).status).toBe(404);
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
