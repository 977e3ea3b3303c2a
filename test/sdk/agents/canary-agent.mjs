#!/usr/bin/env node
/**
 * A test ACP agent on @agentclientprotocol/sdk 2.x that puts the prompt's text (a canary) in every
 * content field it has: a `tool_call` update (title, content, locations, raw input), then a
 * `session/request_permission` for that tool call (its command, title, `_meta`, option names). It
 * reports the outcome as `outcome: <optionId or cancelled>`.
 */
import { runAgent, say } from "./scaffold.mjs";

async function prompt(ctx) {
  const { sessionId, prompt: blocks } = ctx.params;
  const canary = blocks.map((b) => b.text ?? "").join("");
  const toolCallId = "t1";
  await ctx.client.notify("session/update", {
    sessionId,
    update: {
      sessionUpdate: "tool_call",
      toolCallId,
      title: `Run ${canary}`,
      kind: "execute",
      status: "pending",
      content: [{ type: "content", content: { type: "text", text: `about to run ${canary}` } }],
      locations: [{ path: `/srv/${canary}/file` }],
      rawInput: { command: `echo ${canary}` },
    },
  });
  const answer = await ctx.client.request("session/request_permission", {
    sessionId,
    toolCall: { toolCallId, title: `echo ${canary}`, kind: "execute", rawInput: { command: `echo ${canary}` } },
    options: [
      { optionId: "allow", name: `Allow ${canary}`, kind: "allow_once" },
      { optionId: "deny", name: `Deny ${canary}`, kind: "reject_once" },
    ],
    _meta: { note: canary },
  });
  const { outcome } = answer;
  await say(ctx, `outcome: ${outcome.outcome === "selected" ? outcome.optionId : outcome.outcome}`);
  return { stopReason: "end_turn" };
}

runAgent("canary-agent", prompt);
