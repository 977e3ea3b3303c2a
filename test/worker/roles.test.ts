/** The role matrix: every dashboard route, called by a member of every role of one team. */
import { beforeAll, describe, expect, it } from "vitest";
import type { Role } from "../../sdk/src/human/roles";
import { api, askOnce, createKey, decide, type Member, signUp } from "./helpers";
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
