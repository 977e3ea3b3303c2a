#!/usr/bin/env node
/**
 * A test ACP agent on @agentclientprotocol/sdk 2.x that asks with the ACP v2 draft permission
 * request (`title`, `description`, `subject`), a custom `_` option kind and W3C trace keys in
 * `_meta`, and reports what it got back as a message: `outcome: selected <id>`,
 * `outcome: cancelled`, or `error: <code> <message>`. The prompt text picks the request:
 *   command   subject {type: "command", command, cwd, terminalId}
 *   custom    subject of a type Tapgate does not know (`_acme.dev/deploy`)
 *   v1        a v1 request (`toolCall`)
 */
import { runAgent, say } from "./scaffold.mjs";

/** Exact strings: the test checks that Tapgate stores them byte for byte. */
const TRACE_META = {
  traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
  tracestate: "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
  baggage: "userId=alice,serverNode=DF%2028,isProduction=false",
};

const OPTIONS = [
  { optionId: "yes", name: "Run it", kind: "allow_once" },
  { optionId: "snooze", name: "Ask me after lunch", kind: "_acme.dev/snooze", _meta: { "acme.dev/minutes": 60 } },
  { optionId: "no", name: "Don't", kind: "reject_once" },
];

function request(scenario, sessionId) {
  const common = { sessionId, options: OPTIONS, _meta: { ...TRACE_META, "acme.dev/run": 7 } };
  if (scenario === "v1")
    return { ...common, toolCall: { toolCallId: "t1", title: "Run the migration", kind: "execute" } };
  const subject =
    scenario === "custom"
      ? { type: "_acme.dev/deploy", target: { env: "prod", replicas: 3 } }
      : { type: "command", command: "npm run migrate -- --force", cwd: "/srv/app", terminalId: "term-1" };
  return { ...common, title: "Run the database migration?", description: "It rewrites the users table.", subject };
}

async function prompt(ctx) {
  const { sessionId } = ctx.params;
  const scenario = ctx.params.prompt.map((b) => b.text ?? "").join("");
  let text;
  try {
    const answer = await ctx.client.request("session/request_permission", request(scenario, sessionId));
    const { outcome } = answer;
    text = outcome.outcome === "selected" ? `outcome: selected ${outcome.optionId}` : `outcome: ${outcome.outcome}`;
  } catch (err) {
    text = `error: ${err.code} ${err.message}`;
  }
  await say(ctx, text);
  return { stopReason: "end_turn" };
}

runAgent("v2-permission-agent", prompt);
