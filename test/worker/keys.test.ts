import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { joinAgentSession } from "../../worker/db";
import {
  api,
  askOnce,
  connectAgent,
  createKey,
  hubStub,
  json,
  type Member,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import { addMember } from "./team-helpers";

describe("revoking an API key", () => {
  it("denies its pending requests (key_revoked), closes its sockets, and refuses it from then on", async () => {
    const { owner, key, keyId, agent, sessionId, approval } = await askOnce();
    await agent.ask(2, permissionParams(sessionId));
    // Another key of the same owner on the same session is not touched.
    const { key: otherKey } = await createKey(owner, "other");
    const bystander = await connectAgent(otherKey, sessionId);
    await bystander.ask(1, permissionParams(sessionId));

    const revoked = await api(`/v1/keys/${keyId}`, { method: "DELETE", cookie: owner.cookie });
    expect(revoked.status).toBe(200);
    expect(await json(revoked)).toMatchObject({ id: keyId, deniedRequests: 2 });
    const answers = [await agent.next(), await agent.next()];
    expect(answers.map((a) => a.id).sort()).toEqual([1, 2]);
    for (const a of answers) {
      expect(a.result).toMatchObject({
        outcome: { outcome: "selected", optionId: "deny" },
        _meta: { tapgate: { reason: "key_revoked" } },
      });
    }
    expect((await agent.closed).code).toBe(4001);

    const read = await json<Approval>(await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }));
    expect(read).toMatchObject({ state: "denied", reason: "key_revoked" });
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(1); // the bystander's
    await expect(connectAgent(key, sessionId)).rejects.toThrow(/401/);
    await expect(connectAgent(key, "fresh-session")).rejects.toThrow(/401/);
  });
});

describe("who may revoke which key", () => {
  it("an admin revokes a member's key but never an owner's; an approver only their own", async () => {
    const owner = await signUp("Olga");
    const admin = await addMember(owner, "admin");
    const approver = await addMember(owner, "approver");
    const ownerKey = await createKey(owner, "owner laptop");
    const approverKey = await createKey(approver, "approver laptop");
    const revoke = (member: Member, keyId: string) =>
      api(`/v1/keys/${keyId}`, { method: "DELETE", cookie: member.cookie });

    expect((await revoke(approver, ownerKey.id)).status).toBe(404);
    expect((await revoke(admin, ownerKey.id)).status).toBe(404);
    expect((await revoke(admin, approverKey.id)).status).toBe(200);
    expect((await revoke(owner, ownerKey.id)).status).toBe(200);
  });

  it("a join that passed the key check before a revocation is still refused (one transaction)", async () => {
    const { owner, keyId, sessionId } = await askOnce();
    await api(`/v1/keys/${keyId}`, { method: "DELETE", cookie: owner.cookie });
    // As if the key check had passed just before the revocation landed.
    const agent = { keyId, userId: owner.userId, teamId: owner.teamId };
    expect(await joinAgentSession(env.DB, { ...agent, sessionId: `${sessionId}-b`, now: Date.now() })).toBe("revoked");
  });
});

describe("an agent key an isolate has cached", () => {
  async function pendingOverHttp(key: string) {
    const sessionId = unique("cached-key");
    const opened = await api(`/v1/agent/sessions/${sessionId}/permissions`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}` },
      body: JSON.stringify(permissionParams(sessionId)),
    });
    expect(opened.status).toBe(201);
    const { approvalId } = await json<{ approvalId: string }>(opened);
    return () => api(`/v1/agent/approvals/${approvalId}`, { headers: { Authorization: `Bearer ${key}` } });
  }

  it("is taken without a D1 read while the team's hub vouches for it, and refused at once once revoked", async () => {
    const owner = await signUp();
    const { id: keyId, key } = await createKey(owner);
    const poll = await pendingOverHttp(key);
    expect((await poll()).status).toBe(202);
    // No route changes a key behind its hub's back: this one shows the poll reads no D1 for its key.
    await env.DB.prepare("UPDATE api_keys SET key_hash = 'elsewhere' WHERE id = ?").bind(keyId).run();
    expect((await poll()).status).toBe(202);

    expect((await api(`/v1/keys/${keyId}`, { method: "DELETE", cookie: owner.cookie })).status).toBe(200);
    const refused = await poll();
    expect(refused.status).toBe(401);
    expect(await json(refused)).toMatchObject({ error: "bad_api_key" });
  });

  it("is refused at once when its holder leaves the team, even before the key's own revocation", async () => {
    const owner = await signUp();
    const member = await addMember(owner, "approver");
    const { key } = await createKey(member);
    const poll = await pendingOverHttp(key);
    expect((await poll()).status).toBe(202);

    // What a removal does first (D1, then the hub's directory), its key revocations not yet run.
    await env.DB.prepare("DELETE FROM memberships WHERE team_id = ? AND user_id = ?")
      .bind(owner.teamId, member.userId)
      .run();
    await hubStub(owner.teamId).forgetDirectory();
    const refused = await poll();
    expect(refused.status).toBe(401);
    expect(await json(refused)).toMatchObject({ error: "bad_api_key" });
  });
  it("joins a session it joined lately without D1, and still not once the key is revoked", async () => {
    const owner = await signUp();
    const other = await signUp("Bob");
    const { id: keyId, key } = await createKey(owner);
    const sessionId = unique("joined-lately");
    const open = () =>
      api(`/v1/agent/sessions/${sessionId}/permissions`, {
        method: "POST",
        headers: { Authorization: `Bearer ${key}` },
        body: JSON.stringify(permissionParams(sessionId)),
      });
    expect((await open()).status).toBe(201);
    // No route moves a session to another owner: this shows the next request's join reads no D1.
    await env.DB.prepare("UPDATE agent_sessions SET owner_user_id = ? WHERE team_id = ? AND session_id = ?")
      .bind(other.userId, owner.teamId, sessionId)
      .run();
    expect((await open()).status).toBe(201);

    expect((await api(`/v1/keys/${keyId}`, { method: "DELETE", cookie: owner.cookie })).status).toBe(200);
    const refused = await open();
    expect(refused.status).toBe(401);
    expect(await json(refused)).toMatchObject({ error: "bad_api_key" });
  });
});
