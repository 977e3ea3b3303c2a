/**
 * The team policy: reading, changing, reaching open sessions; and weakening it, which needs an
 * owner's passkey over that very change (a software authenticator stands in for the phone).
 */
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import type { PolicyStepUpAnswer } from "../../sdk/src/human/step-up";
import { DEFAULT_POLICY, type TeamPolicy } from "../../worker/policy";
import {
  api,
  askOnce,
  connectAgent,
  createKey,
  json,
  type Member,
  outbox,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import { addMember, confirmPolicy, policyStepUpOptions, withPasskey } from "./team-helpers";

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

const readPolicy = async (m: Member) => json<TeamPolicy>(await api("/v1/policy", { cookie: m.cookie }));

/** Each weakening, from the policy it weakens. */
const WEAKENINGS: Array<[string, Partial<TeamPolicy>, Partial<TeamPolicy>]> = [
  ["empty highRisk", {}, { highRisk: [] }],
  ["narrow a pattern", {}, { highRisk: [{ command: "rm -rf /tmp/*" }, ...DEFAULT_POLICY.highRisk.slice(1)] }],
  ["lower the quorum", { highRiskQuorum: 2 }, { highRiskQuorum: 1 }],
  ["widen who decides", { deciders: "session_owner" }, { deciders: "any_approver" }],
  ["show more on the lock screen", { lockScreen: "generic" }, { lockScreen: "tool_title" }],
  ["reach a chat channel", {}, { escalation: [{ afterMs: 0, to: "session_owner", via: "telegram" }] }],
];

describe("weakening the policy needs an owner's passkey", () => {
  for (const [name, from, to] of WEAKENINGS) {
    it(`${name}: 403 step_up_required for an owner, 403 forbidden for an admin; nothing changes`, async () => {
      const owner = await signUp("Olga");
      const admin = await addMember(owner, "admin", "Ada");
      const start = { ...DEFAULT_POLICY, ...from };
      expect((await put(owner.cookie, start)).status).toBe(200); // strengthening needs nothing more
      const weaker = { ...start, ...to };
      const asked = await put(owner.cookie, weaker);
      expect(asked.status).toBe(403);
      expect(await json(asked)).toMatchObject({ error: "step_up_required", weakens: [Object.keys(to)[0]] });
      const refused = await put(admin.cookie, weaker);
      expect(refused.status).toBe(403);
      expect(await json(refused)).toMatchObject({ error: "forbidden" });
      const options = await policyStepUpOptions(admin, weaker);
      expect(options.status).toBe(403);
      expect(await json(options)).toMatchObject({ error: "forbidden" });
      expect(await readPolicy(owner)).toEqual(start);
    });
  }

  it("strengthening, and other settings, need nothing more, from an admin too", async () => {
    const owner = await signUp("Olga");
    const admin = await addMember(owner, "admin", "Ada");
    const stronger = {
      ...DEFAULT_POLICY,
      highRisk: [...DEFAULT_POLICY.highRisk, { command: "make deploy-prod*" }],
      highRiskQuorum: 2,
      deciders: "session_owner",
      lockScreen: "generic",
      lifetimeMs: 120_000,
    };
    expect((await put(admin.cookie, stronger)).status).toBe(200);
    expect(await readPolicy(owner)).toEqual(stronger);
    const options = await policyStepUpOptions(owner, stronger);
    expect(options.status).toBe(400);
    expect(await json(options)).toMatchObject({ error: "step_up_not_needed" });
  });

  it("with the owner's passkey over that change: saved, audited with before and after, mailed to every owner", async () => {
    const owner = await withPasskey(await signUp("Olga"));
    const coOwner = await addMember(owner, "owner", "otto"); // lower case: the outbox query is an address, lower-cased
    const weaker = { ...DEFAULT_POLICY, highRisk: [] };
    const stepUp = await confirmPolicy(owner, weaker);
    const saved = await put(owner.cookie, { ...weaker, stepUp });
    expect(saved.status).toBe(200);
    expect(await json(saved)).toEqual(weaker);
    expect(await readPolicy(owner)).toEqual(weaker);

    const { entries } = await json<{ entries: Array<{ action: string; detail: unknown }> }>(
      await api("/v1/audit", { cookie: owner.cookie }),
    );
    expect(entries[0]).toMatchObject({
      action: "team.policy_changed",
      detail: { before: DEFAULT_POLICY, after: weaker, weakened: ["highRisk"], confirmedWith: owner.authenticator.id },
    });
    for (const o of [owner, coOwner]) {
      const { messages } = await json<{ messages: Array<{ subject: string; text: string; link: string }> }>(
        await outbox(o.email),
      );
      expect(messages.at(-1)).toMatchObject({
        subject: expect.stringContaining("was weakened"),
        text: expect.stringContaining("removes or narrows a high-risk pattern"),
        link: expect.stringMatching(/\/policy$/),
      });
    }
  });

  it("the assertion is for that change only, once, and never a decision's", async () => {
    const owner = await withPasskey(await signUp("Olga"));
    const weaker = { ...DEFAULT_POLICY, highRisk: [] };
    const other = { ...DEFAULT_POLICY, highRisk: DEFAULT_POLICY.highRisk.slice(1) };
    const forOther = await confirmPolicy(owner, other);
    const wrong = await put(owner.cookie, { ...weaker, stepUp: forOther });
    expect(wrong.status).toBe(403);
    expect(await json(wrong)).toMatchObject({ error: "step_up_wrong_request" });
    expect(await readPolicy(owner)).toEqual(DEFAULT_POLICY);

    const stepUp = await confirmPolicy(owner, weaker);
    expect((await put(owner.cookie, { ...weaker, stepUp })).status).toBe(200);
    expect((await put(owner.cookie, DEFAULT_POLICY)).status).toBe(200); // back: strengthening
    const replayed = await put(owner.cookie, { ...weaker, stepUp });
    expect(replayed.status).toBe(403);
    expect(await json(replayed)).toMatchObject({ error: "step_up_replayed" });
    expect(await readPolicy(owner)).toEqual(DEFAULT_POLICY);

    const noUv = await owner.authenticator.assert(
      (await json<PolicyStepUpAnswer>(await policyStepUpOptions(owner, weaker))).options as never,
      { userVerified: false },
    );
    const unverified = await put(owner.cookie, { ...weaker, stepUp: noUv });
    expect(await json(unverified)).toMatchObject({ error: "step_up_no_user_verification" });
    expect(await readPolicy(owner)).toEqual(DEFAULT_POLICY);
  });

  it("a policy step-up does not allow a high-risk request", async () => {
    const owner = await withPasskey(await signUp("Olga"));
    const { key } = await createKey(owner);
    const sessionId = unique("sess");
    const agent = await connectAgent(key, sessionId);
    await agent.ask(
      1,
      permissionParams(sessionId, {
        toolCall: { toolCallId: "p", title: "rm -rf build", kind: "execute", rawInput: { command: "rm -rf build" } },
      }),
    );
    const [approval] = await pendingApprovals(owner, sessionId);
    expect(approval?.risk).toBe("high");
    const stepUp = await confirmPolicy(owner, { ...DEFAULT_POLICY, highRisk: [] });
    const decided = await api(`/v1/approvals/${approval?.id}/decision`, {
      method: "POST",
      cookie: owner.cookie,
      body: JSON.stringify({ optionId: "allow", requestHash: approval?.requestHash, stepUp }),
    });
    expect(decided.status).toBe(403);
    expect(await json(decided)).toMatchObject({ error: "step_up_wrong_request" });
  });
});

describe("private mode is an owner's, with their passkey, either way", () => {
  for (const [name, from, to] of [
    ["on", "standard", "private"],
    ["off", "private", "standard"],
  ] as const) {
    it(`turning it ${name}: 403 step_up_required, forbidden for an admin; with the owner's passkey saved and audited`, async () => {
      const owner = await withPasskey(await signUp("Olga"));
      const admin = await addMember(owner, "admin", "Ada");
      const start = { ...DEFAULT_POLICY, privacy: from };
      if (from !== DEFAULT_POLICY.privacy) {
        expect((await put(owner.cookie, { ...start, stepUp: await confirmPolicy(owner, start) })).status).toBe(200);
      }
      const next = { ...start, privacy: to };
      const asked = await put(owner.cookie, next);
      expect(asked.status).toBe(403);
      expect(await json(asked)).toMatchObject({ error: "step_up_required", weakens: ["privacy"] });
      const refused = await put(admin.cookie, next);
      expect(refused.status).toBe(403);
      expect(await json(refused)).toMatchObject({ error: "forbidden" });
      expect(await readPolicy(owner)).toEqual(start);

      const saved = await put(owner.cookie, { ...next, stepUp: await confirmPolicy(owner, next) });
      expect(saved.status).toBe(200);
      expect(await readPolicy(owner)).toEqual(next);
      const { entries } = await json<{ entries: Array<{ action: string; detail: unknown }> }>(
        await api("/v1/audit", { cookie: owner.cookie }),
      );
      expect(entries[0]).toMatchObject({
        action: "team.policy_changed",
        detail: { before: start, after: next, weakened: ["privacy"], confirmedWith: owner.authenticator.id },
      });
    });
  }
});
