import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { joinAgentSession } from "../../worker/db";
import {
  api,
  askOnce,
  connectAgent,
  createKey,
  json,
  type Member,
  pendingApprovals,
  permissionParams,
  signUp,
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
