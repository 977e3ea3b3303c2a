#!/usr/bin/env node
/**
 * A test ACP agent on @agentclientprotocol/sdk 2.x whose own requests carry string ids, and which
 * withdraws permission requests with `$/cancel_request`. The prompt text picks the scenario:
 *   ask       ask permission, report the outcome (and Tapgate's `_meta.tapgate.message`) as a message, end the turn
 *   withdraw  ask, and withdraw the request when the editor sends `_test/withdraw`
 *   crash     ask, and exit with code 7 when the editor sends `_test/crash`
 *   refuse    end the turn with stopReason "refusal"
 * Test-only extensions: `_test/received {marker}` answers the raw stdin lines containing `marker`;
 * `_test/emit {line}` writes `line` to stdout as it is.
 */
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const rawInput = [];
process.stdin.on("data", (chunk) => rawInput.push(chunk));

const sessions = new Map();
let withdraw = () => undefined;

/** The library numbers its requests; on the wire this agent's ids are strings. */
function withStringIds(stream) {
  const toWire = (id) => `agent-req-${id}`;
  const fromWire = (id) => (typeof id === "string" && id.startsWith("agent-req-") ? Number(id.slice(10)) : id);
  const out = new TransformStream({
    transform(msg, controller) {
      if ("method" in msg && "id" in msg) msg = { ...msg, id: toWire(msg.id) };
      if (msg.method === "$/cancel_request") msg = { ...msg, params: { requestId: toWire(msg.params.requestId) } };
      controller.enqueue(msg);
    },
  });
  const inbound = new TransformStream({
    transform(msg, controller) {
      controller.enqueue("method" in msg ? msg : { ...msg, id: fromWire(msg.id) });
    },
  });
  void out.readable.pipeTo(stream.writable);
  void stream.readable.pipeTo(inbound.writable);
  return { writable: out.writable, readable: inbound.readable };
}

async function ask(ctx, sessionId, signal) {
  await ctx.client.notify("session/update", {
    sessionId,
    update: {
      sessionUpdate: "tool_call",
      toolCallId: "t1",
      title: "Delete the build cache",
      kind: "delete",
      status: "pending",
    },
  });
  return ctx.client.request(
    "session/request_permission",
    {
      sessionId,
      toolCall: { toolCallId: "t1" },
      options: [
        { optionId: "yes", name: "Delete it", kind: "allow_once" },
        { optionId: "no", name: "Keep it", kind: "reject_once" },
      ],
      _meta: { "x-test": { nested: [1, 2] } },
    },
    { cancellationSignal: signal, stopWaitingOnCancel: true },
  );
}

async function say(ctx, sessionId, text) {
  await ctx.client.notify("session/update", {
    sessionId,
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
  });
}

/** The outcome, and the human's words when Tapgate's answer carries some (`_meta.tapgate.message`). */
function describe(answer) {
  const { outcome } = answer;
  const text = outcome.outcome === "selected" ? `outcome: selected ${outcome.optionId}` : "outcome: cancelled";
  const message = answer._meta?.tapgate?.message;
  return typeof message === "string" ? `${text}; message: ${message}` : text;
}

async function prompt(ctx) {
  const { sessionId } = ctx.params;
  const scenario = ctx.params.prompt.map((b) => b.text ?? "").join("");
  const session = sessions.get(sessionId);
  session.cancelled = false;
  if (scenario === "refuse") return { stopReason: "refusal" };
  const withdrawal = new AbortController();
  if (scenario === "withdraw") withdraw = () => withdrawal.abort();
  try {
    const answer = await ask(ctx, sessionId, withdrawal.signal);
    await say(ctx, sessionId, describe(answer));
  } catch (err) {
    if (!withdrawal.signal.aborted) throw err;
    await say(ctx, sessionId, "withdrawn");
  }
  return { stopReason: session.cancelled ? "cancelled" : "end_turn" };
}

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
acp
  .agent({ name: "string-id-agent" })
  .onRequest("initialize", () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: {},
    agentInfo: { name: "string-id-agent", version: "2.0.0" },
  }))
  .onRequest("session/new", () => {
    const sessionId = `sid-${crypto.randomUUID()}`;
    sessions.set(sessionId, { cancelled: false });
    return { sessionId };
  })
  .onRequest("session/prompt", prompt)
  .onNotification("session/cancel", (ctx) => {
    const session = sessions.get(ctx.params.sessionId);
    if (session) session.cancelled = true;
  })
  .onNotification(
    "_test/withdraw",
    (p) => p,
    () => withdraw(),
  )
  .onNotification(
    "_test/crash",
    (p) => p,
    () => process.exit(7),
  )
  .onRequest(
    "_test/received",
    (p) => p,
    (ctx) => ({
      lines: Buffer.concat(rawInput)
        .toString("utf8")
        .split("\n")
        .filter((line) => line.includes(ctx.params.marker) && !line.includes("_test/received")),
    }),
  )
  .onRequest(
    "_test/emit",
    (p) => p,
    (ctx) => {
      process.stdout.write(`${ctx.params.line}\n`);
      return {};
    },
  )
  .connect(withStringIds(stream));
