#!/usr/bin/env node
/**
 * A test ACP agent on @agentclientprotocol/sdk 2.x that asks the user questions with
 * `elicitation/create`. The prompt text picks the scenario:
 *   caps  report the `clientCapabilities.elicitation` the client advertised at initialize
 *   meta  report the `clientCapabilities._meta` it advertised (codex-acp reads `continueOnReject` there)
 *   form  ask a form (name, port, strategy, logging) and report the answer
 *   url   ask the user to open a URL and report the answer; `_test/complete` sends `elicitation/complete`
 * Each answer is reported as one message: `elicited: <JSON of the result without _meta>`.
 */
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

let advertised;
let advertisedMeta;

const FORM = {
  type: "object",
  properties: {
    name: { type: "string", title: "Project name", description: "Lowercase, no spaces", minLength: 1, maxLength: 20 },
    port: { type: "integer", title: "Port", minimum: 1024, maximum: 65535, default: 3000 },
    strategy: {
      type: "string",
      title: "Strategy",
      oneOf: [
        { const: "safe", title: "Conservative" },
        { const: "bold", title: "Aggressive" },
      ],
      default: "safe",
    },
    logging: { type: "boolean", title: "Enable logging", default: true },
  },
  required: ["name", "port"],
};

async function say(ctx, sessionId, text) {
  await ctx.client.notify("session/update", {
    sessionId,
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
  });
}

async function prompt(ctx) {
  const { sessionId } = ctx.params;
  const scenario = ctx.params.prompt.map((b) => b.text ?? "").join("");
  if (scenario === "caps" || scenario === "meta") {
    const said = scenario === "caps" ? advertised : advertisedMeta;
    await say(ctx, sessionId, `${scenario}: ${JSON.stringify(said ?? null)}`);
    return { stopReason: "end_turn" };
  }
  const params =
    scenario === "url"
      ? {
          sessionId,
          mode: "url",
          message: "Authorize access to your repositories",
          url: "https://github.com/login/oauth/authorize?client_id=abc&state=xyz",
          elicitationId: "oauth-1",
        }
      : { sessionId, mode: "form", message: "How should I set the project up?", requestedSchema: FORM };
  const { _meta, ...answer } = await ctx.client.request("elicitation/create", params);
  await say(ctx, sessionId, `elicited: ${JSON.stringify(answer)}`);
  return { stopReason: "end_turn" };
}

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const conn = acp
  .agent({ name: "elicit-agent" })
  .onRequest("initialize", (ctx) => {
    advertised = ctx.params.clientCapabilities?.elicitation;
    advertisedMeta = ctx.params.clientCapabilities?._meta;
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: {},
      agentInfo: { name: "elicit-agent", version: "2.0.0" },
    };
  })
  .onRequest("session/new", () => ({ sessionId: `sid-${crypto.randomUUID()}` }))
  .onRequest("session/prompt", prompt)
  .onNotification(
    "_test/complete",
    (p) => p,
    (ctx) => void ctx.client.notify("elicitation/complete", { elicitationId: "oauth-1" }),
  )
  .connect(stream);
void conn;
