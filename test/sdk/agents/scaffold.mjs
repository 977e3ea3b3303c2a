/**
 * The scaffold the test ACP agents share (@agentclientprotocol/sdk 2.x over stdio): `initialize`
 * with no capabilities, `session/new` with a fresh id, `session/prompt` by the agent's own
 * handler, and `say`, the agent's report as one message chunk (what the tests read back).
 */
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

/** Sends `text` as an agent message on the session: how a test agent reports what it got. */
export function say(ctx, text) {
  return ctx.client.notify("session/update", {
    sessionId: ctx.params.sessionId,
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
  });
}

/** Runs the agent `name` on stdio, answering each prompt with `prompt(ctx)`. */
export function runAgent(name, prompt) {
  const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
  acp
    .agent({ name })
    .onRequest("initialize", () => ({
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: {},
      agentInfo: { name, version: "1.0.0" },
    }))
    .onRequest("session/new", () => ({ sessionId: `sid-${crypto.randomUUID()}` }))
    .onRequest("session/prompt", prompt)
    .connect(stream);
}
