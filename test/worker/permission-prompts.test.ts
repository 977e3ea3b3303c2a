/**
 * Richer permission prompts (docs/agent-protocol.md "Prompt words and standing answers"): an
 * adapter's `_meta.permission` words reach the card, option ids go back unchanged, and a request
 * that carries `matchedAskRule` or `suppress_always_allow_rule` is offered no persistent option.
 */
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { RULE_DEFAULT_MS, type RuleChoices } from "../../sdk/src/human/rules";
import { DEFAULT_POLICY } from "../../worker/policy";
import {
  api,
  connectAgent,
  createKey,
  decide,
  json,
  type Member,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import { makeRule, npmTest, session, teamRule } from "./rule-helpers";

/** A member whose team shows standing options (`onceOnlyOptions: false`), with an agent socket. */
async function standingOptionsTeam(): Promise<{
  owner: Member;
  sessionId: string;
  agent: Awaited<ReturnType<typeof connectAgent>>;
}> {
  const owner = await signUp();
  const put = await api("/v1/policy", {
    method: "PUT",
    cookie: owner.cookie,
    body: JSON.stringify({ ...DEFAULT_POLICY, onceOnlyOptions: false }),
  });
  expect(put.status).toBe(200);
  const { key } = await createKey(owner);
  const sessionId = unique("sess");
  return { owner, sessionId, agent: await connectAgent(key, sessionId) };
}

const OPTIONS = [
  {
    optionId: "allow_once",
    name: "Yes, proceed",
    kind: "allow_once",
    _meta: { permission: { version: 1, description: "Run it this time only" } },
  },
  { optionId: "allow_for_session", name: "Yes, and don't ask again", kind: "allow_always" },
  { optionId: "reject_once", name: "No", kind: "reject_once" },
  { optionId: "block", name: "No, and never", kind: "reject_always" },
];

const ruleChoices = (member: Member, approval: Approval) =>
  api(`/v1/approvals/${approval.id}/rule-choices`, { cookie: member.cookie });

async function offered(
  requestMeta: Record<string, unknown> | undefined,
): Promise<{ owner: Member; approval: Approval; agent: Awaited<ReturnType<typeof connectAgent>> }> {
  const { owner, sessionId, agent } = await standingOptionsTeam();
  await agent.ask(1, { ...permissionParams(sessionId), options: OPTIONS, ...(requestMeta && { _meta: requestMeta }) });
  const [approval] = await pendingApprovals(owner, sessionId);
  if (!approval) throw new Error("the request did not become a pending approval");
  return { owner, approval, agent };
}

describe("richer permission prompts", () => {
  it("keeps the adapter's words for the prompt and each option, and answers with the option id as sent", async () => {
    const { owner, approval, agent } = await offered({
      permission: { version: 1, title: "Run command?", description: "It needs to write outside the workspace" },
    });
    expect(approval.snapshot.meta?.permission).toEqual({
      version: 1,
      title: "Run command?",
      description: "It needs to write outside the workspace",
    });
    expect(approval.options.map((o) => o.optionId)).toEqual([
      "allow_once",
      "allow_for_session",
      "reject_once",
      "block",
    ]);
    expect(approval.options[0]?.permission).toEqual({ description: "Run it this time only" });
    expect(approval.options[1]?.permission).toBeUndefined();

    expect((await decide(owner, approval, "allow_once")).status).toBe(200);
    expect(await agent.next()).toMatchObject({
      id: 1,
      result: { outcome: { outcome: "selected", optionId: "allow_once" } },
    });
  });

  it.each([
    [
      "matchedAskRule in _meta",
      { matchedAskRule: { source: "projectSettings", toolName: "Bash", ruleContent: "Bash(rm *)" } },
    ],
    ["suppress_always_allow_rule in _meta", { suppress_always_allow_rule: true }],
    [
      "matchedAskRule in _meta.claudeCode",
      { claudeCode: { matchedAskRule: { source: "userSettings", toolName: "Bash" } } },
    ],
    ["suppress_always_allow_rule in _meta.claudeCode", { claudeCode: { suppress_always_allow_rule: true } }],
  ])("offers no persistent option when the request carries %s, and refuses one named anyway", async (_, meta) => {
    const { owner, approval, agent } = await offered(meta);
    expect(approval.options.map((o) => o.kind)).toEqual(["allow_once", "reject_once"]);
    for (const standing of ["allow_for_session", "block"]) {
      const refused = await decide(owner, approval, standing);
      expect(refused.status).toBe(400);
      expect(await json(refused)).toMatchObject({ error: "option_not_offered" });
    }
    expect(agent.pending()).toBe(0);
    expect((await decide(owner, approval, "reject_once")).status).toBe(200);
    expect(await agent.next()).toMatchObject({
      id: 1,
      result: { outcome: { outcome: "selected", optionId: "reject_once" } },
    });
  });

  it("keeps persistent options when the flags are absent or false", async () => {
    const { owner, approval } = await offered({
      suppress_always_allow_rule: false,
      claudeCode: { matchedAskRule: null },
    });
    expect(approval.options.map((o) => o.kind)).toEqual(["allow_once", "allow_always", "reject_once", "reject_always"]);
    const choices = await json<RuleChoices>(await ruleChoices(owner, approval));
    expect(choices.choices.map((c) => c.choice)).toContain("exact");
  });

  it.each([
    ["matchedAskRule", { matchedAskRule: { source: "localSettings", toolName: "Bash" } }],
    ["suppress_always_allow_rule", { claudeCode: { suppress_always_allow_rule: true } }],
  ])(
    "offers no rule from the card for a request carrying %s, and refuses a decision that makes one",
    async (_, meta) => {
      const { owner, approval, agent } = await offered(meta);
      const choices = await json<RuleChoices>(await ruleChoices(owner, approval));
      expect(choices.choices).toEqual([]);
      const withRule = await api(`/v1/approvals/${approval.id}/decision`, {
        method: "POST",
        cookie: owner.cookie,
        body: JSON.stringify({
          optionId: "allow_once",
          requestHash: approval.requestHash,
          rule: { expiresInMs: RULE_DEFAULT_MS },
        }),
      });
      expect(withRule.status).toBe(409);
      expect(await json(withRule)).toMatchObject({ error: "rule_not_possible" });
      await agent.barrier();
      expect(agent.pending()).toBe(0);
      const rules = await json<{ rules: unknown[] }>(await api("/v1/rules", { cookie: owner.cookie }));
      expect(rules.rules).toEqual([]);
    },
  );
});

describe("a request that asks for no standing answer", () => {
  it.each([
    ["matchedAskRule", { claudeCode: { matchedAskRule: { source: "localSettings", toolName: "Bash" } } }],
    ["suppress_always_allow_rule", { claudeCode: { suppress_always_allow_rule: true } }],
  ])("carrying %s is asked of a human, though a standing rule matches it", async (_, meta) => {
    const owner = await signUp();
    await makeRule(owner, teamRule);
    const { sessionId, agent } = await session(owner);
    // The same call without the flag: the rule answers it at once.
    await agent.ask(1, permissionParams(sessionId, { toolCall: npmTest() }));
    expect(await agent.next()).toMatchObject({ id: 1, result: { _meta: { tapgate: { reason: "rule" } } } });
    await agent.ask(2, { ...permissionParams(sessionId, { toolCall: npmTest() }), _meta: meta });
    await agent.barrier();
    expect(agent.pending()).toBe(0);
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(1);
  });
});

describe("ACP v2: an unoffered optionId is never an allow", () => {
  it("a decision naming an option the v2 request did not offer is 400 option_not_offered and answers nothing", async () => {
    const { owner, sessionId, agent } = await standingOptionsTeam();
    await agent.ask(7, {
      sessionId,
      title: "Run the migration?",
      subject: { type: "command", command: "npm run migrate", cwd: "/srv/app" },
      options: [
        { optionId: "go", name: "Run it", kind: "allow_once" },
        { optionId: "stop", name: "Don't", kind: "reject_once" },
      ],
      _meta: { suppress_always_allow_rule: true },
    });
    const [approval] = await pendingApprovals(owner, sessionId);
    if (!approval) throw new Error("the v2 request did not become a pending approval");
    expect(approval.snapshot.permission).toMatchObject({ title: "Run the migration?" });
    for (const unoffered of ["allow", "allow_always", "proceed_always"]) {
      const refused = await decide(owner, approval, unoffered);
      expect(refused.status).toBe(400);
      expect(await json(refused)).toMatchObject({ error: "option_not_offered" });
    }
    await agent.barrier();
    expect(agent.pending()).toBe(0);
    const still = await json<Approval>(await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }));
    expect(still.state).toBe("pending");
    expect((await decide(owner, approval, "stop")).status).toBe(200);
    expect(await agent.next()).toMatchObject({ id: 7, result: { outcome: { outcome: "selected", optionId: "stop" } } });
  });
});
