import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { DEFAULT_POLICY } from "../../worker/policy";
import {
  api,
  askOnce,
  connectAgent,
  createKey,
  json,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";

const put = (cookie: string, body: unknown) => api("/v1/policy", { method: "PUT", cookie, body: JSON.stringify(body) });

describe("team policy", () => {
  it("reads the defaults, refuses invalid settings, and audits a change with before and after", async () => {
    const owner = await signUp();
    expect(await json(await api("/v1/policy", { cookie: owner.cookie }))).toEqual(DEFAULT_POLICY);
    expect((await put(owner.cookie, { lifetimeMs: 1000 })).status).toBe(400);
    expect((await put(owner.cookie, { notify: "everyone" })).status).toBe(400);
    expect((await put(owner.cookie, { surprise: true })).status).toBe(400);

    const next = { ...DEFAULT_POLICY, lifetimeMs: 120_000, notify: "all_approvers", lockScreen: "generic" };
    const changed = await put(owner.cookie, next);
    expect(changed.status).toBe(200);
    expect(await json(changed)).toEqual(next);
    expect(await json(await api("/v1/policy", { cookie: owner.cookie }))).toEqual(next);
    const { entries } = await json<{ entries: Array<{ action: string; detail: unknown }> }>(
      await api("/v1/audit", { cookie: owner.cookie }),
    );
    expect(entries[0]).toMatchObject({
      action: "team.policy_changed",
      detail: { before: DEFAULT_POLICY, after: next, version: 1 },
    });
  });

  it("applies to new requests on sockets that were already open, not to requests already waiting", async () => {
    const { owner, agent, sessionId, approval } = await askOnce();
    expect(approval.options.map((o) => o.optionId)).toEqual(["allow", "deny"]);

    expect((await put(owner.cookie, { ...DEFAULT_POLICY, onceOnlyOptions: false, lifetimeMs: 60_000 })).status).toBe(
      200,
    );
    await agent.ask(2, permissionParams(sessionId));

    const pending = await pendingApprovals(owner, sessionId);
    const fresh = pending.find((a) => a.id !== approval.id) as Approval;
    expect(fresh.options.map((o) => o.optionId)).toEqual(["allow", "always", "deny"]);
    expect(fresh.expiresAt - fresh.createdAt).toBe(60_000);
    const old = pending.find((a) => a.id === approval.id) as Approval;
    expect(old.options.map((o) => o.optionId)).toEqual(["allow", "deny"]);
  });

  it("reaches a session that joins right after the change, though joins are handed the hub's copy", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    // A first join makes the hub hold the policy; the change must replace it at once.
    const first = unique("sess");
    await (await connectAgent(key, first)).ask(1, permissionParams(first));
    expect((await put(owner.cookie, { ...DEFAULT_POLICY, onceOnlyOptions: false })).status).toBe(200);

    const second = unique("sess");
    await (await connectAgent(key, second)).ask(1, permissionParams(second));
    const [fresh] = await pendingApprovals(owner, second);
    expect(fresh?.options.map((o) => o.optionId)).toEqual(["allow", "always", "deny"]);
  });
});
