/**
 * The role matrix: every dashboard route, called by a member of every role of one team. Then the
 * admin routes read the role fresh: a demotion made elsewhere (D1, as another isolate would make
 * it, while this isolate still caches the session) refuses the demoted admin's next admin request.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { Role } from "../../sdk/src/human/roles";
import { api, askOnce, createKey, decide, json, type Member, signUp } from "./helpers";
import { addMember } from "./team-helpers";

const ROLES: Role[] = ["owner", "admin", "approver", "viewer"];
type Expect = Record<Role, number>;
const everyone: Expect = { owner: 200, admin: 200, approver: 200, viewer: 200 };
const admins: Expect = { owner: 200, admin: 200, approver: 403, viewer: 403 };

let team: Member;
const members = {} as Record<Role, Member>;

beforeAll(async () => {
  team = await signUp("Olga");
  members.owner = team;
  for (const role of ROLES.slice(1)) members[role] = await addMember(team, role);
});

/** Each call gets its own target, so a change made for one role does not affect the next. */
const routes: Array<{ name: string; expect: Expect; call: (m: Member) => Promise<Response> }> = [
  { name: "GET /v1/teams", expect: everyone, call: (m) => api("/v1/teams", { cookie: m.cookie }) },
  { name: "GET /v1/members", expect: everyone, call: (m) => api("/v1/members", { cookie: m.cookie }) },
  {
    name: "PATCH /v1/members/:id",
    expect: admins,
    call: async (m) => {
      const target = await addMember(team, "approver");
      return api(`/v1/members/${target.userId}`, { method: "PATCH", cookie: m.cookie, body: '{"role":"viewer"}' });
    },
  },
  {
    name: "DELETE /v1/members/:id",
    expect: admins,
    call: async (m) => {
      const target = await addMember(team, "viewer");
      return api(`/v1/members/${target.userId}`, { method: "DELETE", cookie: m.cookie });
    },
  },
  {
    name: "POST /v1/invites",
    expect: { ...admins, owner: 201, admin: 201 },
    call: (m) => api("/v1/invites", { method: "POST", cookie: m.cookie, body: '{"role":"viewer"}' }),
  },
  { name: "GET /v1/invites", expect: admins, call: (m) => api("/v1/invites", { cookie: m.cookie }) },
  {
    name: "DELETE /v1/invites/:id",
    expect: admins,
    call: async (m) => {
      const made = await api("/v1/invites", { method: "POST", cookie: team.cookie, body: '{"role":"viewer"}' });
      const { id } = (await made.json()) as { id: string };
      return api(`/v1/invites/${id}`, { method: "DELETE", cookie: m.cookie });
    },
  },
  { name: "GET /v1/keys", expect: everyone, call: (m) => api("/v1/keys", { cookie: m.cookie }) },
  { name: "GET /v1/keys?scope=team", expect: admins, call: (m) => api("/v1/keys?scope=team", { cookie: m.cookie }) },
  {
    name: "DELETE /v1/keys/:id (another member's key)",
    expect: { owner: 200, admin: 200, approver: 404, viewer: 404 },
    call: async (m) => {
      const other = await addMember(team, "approver");
      const { id } = await createKey(other);
      return api(`/v1/keys/${id}`, { method: "DELETE", cookie: m.cookie });
    },
  },
  { name: "GET /v1/policy", expect: everyone, call: (m) => api("/v1/policy", { cookie: m.cookie }) },
  {
    name: "PUT /v1/policy",
    expect: admins,
    call: (m) => api("/v1/policy", { method: "PUT", cookie: m.cookie, body: '{"lifetimeMs":600000}' }),
  },
  { name: "GET /v1/sessions", expect: everyone, call: (m) => api("/v1/sessions", { cookie: m.cookie }) },
  { name: "GET /v1/history", expect: everyone, call: (m) => api("/v1/history", { cookie: m.cookie }) },
  {
    name: "GET /v1/history/export",
    expect: everyone,
    call: (m) => api("/v1/history/export?format=json", { cookie: m.cookie }),
  },
  { name: "GET /v1/stats", expect: everyone, call: (m) => api("/v1/stats", { cookie: m.cookie }) },
  { name: "GET /v1/audit", expect: admins, call: (m) => api("/v1/audit", { cookie: m.cookie }) },
  { name: "GET /v1/audit/verify", expect: admins, call: (m) => api("/v1/audit/verify", { cookie: m.cookie }) },
  {
    name: "POST /v1/approvals/:id/decision",
    expect: { owner: 200, admin: 200, approver: 200, viewer: 403 },
    call: async (m) => {
      const { approval } = await askOnce(team);
      return decide(m, approval, "allow");
    },
  },
];

describe("the role matrix", () => {
  for (const route of routes) {
    it(route.name, async () => {
      const got: Partial<Expect> = {};
      for (const role of ROLES) got[role] = (await route.call(members[role])).status;
      expect(got).toEqual(route.expect);
    });
  }
});

/** Sets a member's role straight in D1, as a change through another isolate would. */
const setRoleElsewhere = (team: Member, m: Member, role: Role) =>
  env.DB.prepare("UPDATE memberships SET role = ? WHERE team_id = ? AND user_id = ?")
    .bind(role, team.teamId, m.userId)
    .run();

describe("admin routes read the role fresh", () => {
  it("an admin demoted elsewhere is refused at once, even promoting themselves back", async () => {
    const owner = await signUp("Olga");
    const ada = await addMember(owner, "admin", "Ada");
    const target = await addMember(owner, "approver", "Bob");
    const { id: bobsKey } = await createKey(target);
    const invite = await json<{ id: string }>(
      await api("/v1/invites", { method: "POST", cookie: owner.cookie, body: '{"role":"viewer"}' }),
    );
    // This isolate caches Ada as an admin now.
    expect((await api("/v1/invites", { cookie: ada.cookie })).status).toBe(200);
    await setRoleElsewhere(owner, ada, "approver");

    const attempts: Array<[string, Promise<Response>, number]> = [
      [
        "promote self",
        api(`/v1/members/${ada.userId}`, { method: "PATCH", cookie: ada.cookie, body: '{"role":"admin"}' }),
        403,
      ],
      [
        "change a role",
        api(`/v1/members/${target.userId}`, { method: "PATCH", cookie: ada.cookie, body: '{"role":"viewer"}' }),
        403,
      ],
      ["remove a member", api(`/v1/members/${target.userId}`, { method: "DELETE", cookie: ada.cookie }), 403],
      ["invite", api("/v1/invites", { method: "POST", cookie: ada.cookie, body: '{"role":"admin"}' }), 403],
      ["list invites", api("/v1/invites", { cookie: ada.cookie }), 403],
      ["revoke an invite", api(`/v1/invites/${invite.id}`, { method: "DELETE", cookie: ada.cookie }), 403],
      [
        "change the policy",
        api("/v1/policy", { method: "PUT", cookie: ada.cookie, body: '{"lifetimeMs":600000}' }),
        403,
      ],
      ["list the team's keys", api("/v1/keys?scope=team", { cookie: ada.cookie }), 403],
      ["revoke another's key", api(`/v1/keys/${bobsKey}`, { method: "DELETE", cookie: ada.cookie }), 404],
      [
        "make a team rule",
        api("/v1/rules", {
          method: "POST",
          cookie: ada.cookie,
          body: JSON.stringify({ scope: "team", match: { command: "ls" }, expiresInMs: 3_600_000 }),
        }),
        403,
      ],
    ];
    const got = Object.fromEntries(await Promise.all(attempts.map(async ([name, r]) => [name, (await r).status])));
    expect(got).toEqual(Object.fromEntries(attempts.map(([name, , status]) => [name, status])));
    const members = await json<{ members: Array<{ userId: string; role: Role }> }>(
      await api("/v1/members", { cookie: owner.cookie }),
    );
    expect(members.members.find((m) => m.userId === ada.userId)?.role).toBe("approver");
    expect(members.members.find((m) => m.userId === target.userId)?.role).toBe("approver");
  });

  it("a team rule's end and a claim use the role D1 has now", async () => {
    const owner = await signUp("Olga");
    const ada = await addMember(owner, "admin", "Ada");
    const made = await api("/v1/rules", {
      method: "POST",
      cookie: owner.cookie,
      body: JSON.stringify({ scope: "team", match: { command: "ls" }, expiresInMs: 3_600_000 }),
    });
    expect(made.status).toBe(201);
    const { rule } = await json<{ rule: { id: string } }>(made);
    const { approval } = await askOnce(owner);
    expect((await api("/v1/me", { cookie: ada.cookie })).status).toBe(200);
    await setRoleElsewhere(owner, ada, "viewer");
    const ended = await api(`/v1/rules/${rule.id}`, { method: "DELETE", cookie: ada.cookie });
    expect(ended.status).toBe(404); // as for any rule a non-admin did not make
    const rules = await json<{ rules: Array<{ id: string; endedAt: number | null }> }>(
      await api("/v1/rules", { cookie: owner.cookie }),
    );
    expect(rules.rules.find((r) => r.id === rule.id)?.endedAt).toBeNull();
    const claimed = await api(`/v1/approvals/${approval.id}/claim`, { method: "POST", cookie: ada.cookie, body: "{}" });
    expect(claimed.status).toBe(403);
  });
});
