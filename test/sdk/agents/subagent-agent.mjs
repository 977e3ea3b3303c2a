#!/usr/bin/env node
/**
 * A test ACP agent on @agentclientprotocol/sdk 2.x with one subagent per turn. It announces the
 * child on the parent session (`subagent_update`, ACP 2.x fields), then asks for a permission under
 * the child's session id, and reports the child's answer on the parent as `child: <outcome>`.
 * A client that did not advertise `clientCapabilities.subagents` gets ` (not advertised)` after it.
 * The prompt text picks what happens next:
 *   ask   the turn waits for the answer
 *   end   on the editor's `session/cancel`, the agent reports the child idle (its work ended)
 *         before the answer came, as an agent whose subagent was stopped does
 */
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const turns = new Map();
let advertised = false;
// The library drops capabilities it does not know (ACP 2.x has none for subagents): read the raw line.
const rawInput = [];
process.stdin.on("data", (chunk) => rawInput.push(chunk));

async function prompt(ctx) {
  const { sessionId } = ctx.params;
  const scenario = ctx.params.prompt.map((b) => b.text ?? "").join("");
  const child = `${sessionId}.tests`;
  const subagent = (fields) =>
    ctx.client.notify("session/update", {
      sessionId,
      update: { sessionUpdate: "subagent_update", sessionId: child, ...fields },
    });
  await subagent({ title: "tests", description: "run the suite", state: { state: "running" } });
  const cancelled = new Promise((resolve) => turns.set(sessionId, resolve));
  const answer = ctx.client.request("session/request_permission", {
    sessionId: child,
    toolCall: { toolCallId: "t1", title: "Run the tests", kind: "execute", status: "pending" },
    options: [
      { optionId: "yes", name: "Run them", kind: "allow_once" },
      { optionId: "no", name: "Skip", kind: "reject_once" },
    ],
  });
  if (scenario === "end") {
    await cancelled;
    await subagent({ state: { state: "idle", stopReason: "cancelled" } });
  }
  const { outcome } = await answer;
  const text = `child: ${outcome.outcome === "selected" ? outcome.optionId : outcome.outcome}${advertised ? "" : " (not advertised)"}`;
  await ctx.client.notify("session/update", {
    sessionId,
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
  });
  return { stopReason: scenario === "end" ? "cancelled" : "end_turn" };
}

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
acp
  .agent({ name: "subagent-agent" })
  .onRequest("initialize", () => {
    advertised = Buffer.concat(rawInput).toString("utf8").includes('"subagents":{}');
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: {},
      agentInfo: { name: "subagent-agent", version: "1.0.0" },
    };
  })
  .onRequest("session/new", () => ({ sessionId: `sid-${crypto.randomUUID()}` }))
  .onRequest("session/prompt", prompt)
  .onNotification("session/cancel", (ctx) => turns.get(ctx.params.sessionId)?.())
  .connect(stream);
