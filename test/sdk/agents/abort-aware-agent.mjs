#!/usr/bin/env node
/**
 * A test ACP agent on @agentclientprotocol/sdk 2.x that decides its stop reason the way SDK agents
 * commonly do: `session/cancel` aborts the session's own AbortController, and when the permission
 * answer arrives the turn ends `cancelled` only if that signal had already fired, else `end_turn`.
 * It reports the answer and whether the signal had fired as a message: `answer: <outcome>, aborted: <bool>`.
 */
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const turns = new Map();

async function prompt(ctx) {
  const { sessionId } = ctx.params;
  const abort = new AbortController();
  turns.set(sessionId, abort);
  const answer = await ctx.client.request("session/request_permission", {
    sessionId,
    toolCall: { toolCallId: "t1", title: "Run the migrations", kind: "execute", status: "pending" },
    options: [
      { optionId: "yes", name: "Run them", kind: "allow_once" },
      { optionId: "no", name: "Skip", kind: "reject_once" },
    ],
  });
  // The answer is read only now: whether the turn was cancelled is what the signal says at this moment.
  const aborted = abort.signal.aborted;
  const outcome = answer.outcome.outcome === "selected" ? answer.outcome.optionId : answer.outcome.outcome;
  await ctx.client.notify("session/update", {
    sessionId,
    update: {
      sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: `answer: ${outcome}, aborted: ${aborted}` },
    },
  });
  return { stopReason: aborted ? "cancelled" : "end_turn" };
}

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
acp
  .agent({ name: "abort-aware-agent" })
  .onRequest("initialize", () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: {},
    agentInfo: { name: "abort-aware-agent", version: "2.0.0" },
  }))
  .onRequest("session/new", () => ({ sessionId: `sid-${crypto.randomUUID()}` }))
  .onRequest("session/prompt", prompt)
  .onNotification("session/cancel", (ctx) => turns.get(ctx.params.sessionId)?.abort())
  .connect(stream);
