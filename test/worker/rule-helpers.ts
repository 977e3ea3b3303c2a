/** Standing-rule test helpers: an agent session that asks and finds its approval, and a rule's immediate answer. */
import { expect } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import type { Rule } from "../../sdk/src/human/rules";
import type { RequestPermissionParams } from "../../sdk/src/protocol";
import {
  type AgentSocket,
  api,
  connectAgent,
  createKey,
  flush,
  json,
  type Member,
  pendingApprovals,
  permissionParams,
  unique,
} from "./helpers";

type ToolCall = RequestPermissionParams["toolCall"];

/** An agent session of `member`, with hello (host) sent. */
export async function session(member: Member, host = "laptop") {
  const { key } = await createKey(member);
  const sessionId = unique("sess");
  const agent = await connectAgent(key, sessionId);
  await agent.send({ jsonrpc: "2.0", method: "_tapgate/hello", params: { host, agent: { name: "test-agent" } } });
  let id = 0;
  return {
    sessionId,
    agent,
    /** Asks; resolves with the request's approval once it is held or already ended. */
    async ask(toolCall: ToolCall): Promise<{ id: number; approval: Approval }> {
      const rpcId = ++id;
      await agent.ask(rpcId, permissionParams(sessionId, { toolCall }));
      await flush(member.teamId, sessionId);
      const { approvals } = await json<{ approvals: Approval[] }>(
        await api("/v1/approvals?state=resolved&limit=200", { cookie: member.cookie }),
      );
      const pending = await pendingApprovals(member, sessionId);
      const approval = [...pending, ...approvals].find((a) => a.snapshot.toolCall.toolCallId === toolCall.toolCallId);
      if (!approval) throw new Error("the request is neither pending nor resolved");
      return { id: rpcId, approval };
    },
  };
}

/** The agent's next frame must be the rule's immediate answer for this request. */
export async function expectRuleAnswer(agent: AgentSocket, id: number, approval: Approval, rule: Rule) {
  expect(await agent.next()).toEqual({
    jsonrpc: "2.0",
    id,
    result: {
      outcome: { outcome: "selected", optionId: "allow" },
      _meta: { tapgate: { approvalId: approval.id, reason: "rule", rule: { id: rule.id, createdBy: rule.createdBy } } },
    },
  });
}
