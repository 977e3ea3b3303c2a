import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { api, askOnce, connectAgent, createKey, json, pendingApprovals, permissionParams } from "./helpers";

describe("revoking an API key", () => {
  it("denies its pending requests (key_revoked), closes its sockets, and refuses it from then on", async () => {
    const { owner, key, keyId, agent, sessionId, approval } = await askOnce();
    await agent.send({
      jsonrpc: "2.0",
      id: 2,
      method: "session/request_permission",
      params: permissionParams(sessionId),
    });
    // Another key of the same owner on the same session is not touched.
    const { key: otherKey } = await createKey(owner, "other");
    const bystander = await connectAgent(otherKey, sessionId);
    await bystander.send({
      jsonrpc: "2.0",
      id: 1,
      method: "session/request_permission",
      params: permissionParams(sessionId),
    });

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
