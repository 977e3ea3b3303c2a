/**
 * Standing rules without plaintext (docs/human-api.md "Standing rules"): a private request's card
 * offers one rule, "this exact request" by its rule fingerprint; that rule allows the next private
 * request of the same fingerprint in the owner's sessions, never one of another fingerprint and
 * never a high-risk one; a glob rule never matches a private request.
 */
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import type { Rule, RuleChoices } from "../../sdk/src/human/rules";
import { SEALED_TOOL_CALL_ID } from "../../sdk/src/private/contract";
import { newRuleKey, ruleFingerprint } from "../../sdk/src/private/fingerprint";
import { inputFingerprint } from "../../sdk/src/request-match";
import { api, connectAgent, createKey, flush, json, type Member, signUp, unique } from "./helpers";
import { sealedPermission, setPrivacy } from "./private-helpers";
import { makeRule } from "./rule-helpers";

const RULE_KEY = newRuleKey();
const fingerprintOf = (command: string) =>
  ruleFingerprint(RULE_KEY, { kind: "execute", command, cwd: "/repo", host: "laptop" });

/** A private team's agent session: each ask is sealed, and answers with its approval (pending or ended). */
async function privateSession(owner: Member) {
  const { key } = await createKey(owner);
  const sessionId = unique("sealed-rules");
  const agent = await connectAgent(key, sessionId);
  let id = 0;
  return {
    agent,
    async ask(a: { fingerprint?: string; risk?: "high" }) {
      const rpcId = ++id;
      const { params, sealed } = await sealedPermission(sessionId, a);
      await agent.ask(rpcId, params);
      await flush(owner.teamId, sessionId);
      const lists = await Promise.all(
        ["pending", "resolved"].map(async (state) =>
          json<{ approvals: Approval[] }>(
            await api(`/v1/approvals?state=${state}&limit=200`, { cookie: owner.cookie }),
          ),
        ),
      );
      const approval = lists.flatMap((l) => l.approvals).find((x) => x.requestHash === sealed.requestHash);
      if (!approval) throw new Error("neither pending nor resolved");
      return { id: rpcId, approval };
    },
  };
}

describe("rules for private requests", () => {
  it("one choice, by fingerprint; its rule allows the same fingerprint only, never a high-risk one", async () => {
    const owner = await signUp();
    await setPrivacy(owner);
    const s = await privateSession(owner);
    const fingerprint = fingerprintOf("npm test");
    const first = await s.ask({ fingerprint });
    const choices = await json<RuleChoices>(
      await api(`/v1/approvals/${first.approval.id}/rule-choices`, { cookie: owner.cookie }),
    );
    expect(choices.choices).toEqual([
      {
        choice: "exact",
        match: { fingerprint },
        sentence: expect.stringContaining("private request"),
        wouldHaveAllowed: 0,
      },
    ]);
    const decided = await api(`/v1/approvals/${first.approval.id}/decision`, {
      method: "POST",
      cookie: owner.cookie,
      body: JSON.stringify({ optionId: "allow", requestHash: first.approval.requestHash, rule: {} }),
    });
    expect(decided.status).toBe(200);
    const { createdRule } = await json<{ createdRule: Rule }>(decided);
    expect(createdRule.match).toEqual({ fingerprint });
    await s.agent.next();

    const other = await s.ask({ fingerprint: fingerprintOf("npm publish") });
    expect(other.approval).toMatchObject({ state: "pending" });
    const high = await s.ask({ fingerprint, risk: "high" });
    expect(high.approval).toMatchObject({ state: "pending", risk: "high" });
    const none = await s.ask({});
    expect(none.approval).toMatchObject({ state: "pending" });
    const again = await s.ask({ fingerprint });
    expect(again.approval).toMatchObject({ state: "allowed", reason: "rule", rule: { id: createdRule.id } });
    expect(await s.agent.next()).toMatchObject({
      id: again.id,
      result: { outcome: { outcome: "selected", optionId: "allow" }, _meta: { tapgate: { reason: "rule" } } },
    });
  });

  it("a private request without a fingerprint offers no rule", async () => {
    const owner = await signUp();
    await setPrivacy(owner);
    const s = await privateSession(owner);
    const { approval } = await s.ask({});
    const choices = await json<RuleChoices>(
      await api(`/v1/approvals/${approval.id}/rule-choices`, { cookie: owner.cookie }),
    );
    expect(choices.choices).toEqual([]);
  });

  it("a rule without a fingerprint never allows a private request: a glob, or its placeholder's input fingerprint", async () => {
    const owner = await signUp();
    await makeRule(owner, { scope: "me", match: { title: "*" } });
    // What a rule of the placeholder tool call (no command, no arguments) would read of every private request.
    const placeholder = inputFingerprint({ toolCallId: SEALED_TOOL_CALL_ID, kind: "execute" });
    await makeRule(owner, { scope: "me", match: { kind: "execute", input: placeholder } });
    await setPrivacy(owner);
    const s = await privateSession(owner);
    const { approval } = await s.ask({ fingerprint: fingerprintOf("curl x") });
    expect(approval).toMatchObject({ state: "pending" });
  });
});
