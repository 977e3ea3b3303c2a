#!/usr/bin/env node
/**
 * A test ACP agent on @agentclientprotocol/sdk 2.x that takes edited input: its
 * `session/request_permission` says `_meta.tapgate.acceptsEdits: true` for a Bash-like tool call,
 * and it reports what it would run as a message: `run: <JSON of the input>` (the allow's
 * `_meta.tapgate.updatedInput` when there is one, else its own input), or `outcome: <…>` when not allowed.
 */
import { runAgent, say } from "./scaffold.mjs";

const INPUT = { command: "git push origin main", timeout: 60 };

async function prompt(ctx) {
  const { sessionId } = ctx.params;
  const answer = await ctx.client.request("session/request_permission", {
    sessionId,
    toolCall: { toolCallId: "t1", title: "Bash: git push", kind: "execute", rawInput: INPUT },
    options: [
      { optionId: "allow", name: "Allow once", kind: "allow_once" },
      { optionId: "deny", name: "Deny", kind: "reject_once" },
    ],
    _meta: { tapgate: { acceptsEdits: true } },
  });
  const { outcome } = answer;
  const text =
    outcome.outcome === "selected" && outcome.optionId === "allow"
      ? `run: ${JSON.stringify(answer._meta?.tapgate?.updatedInput ?? INPUT)}`
      : `outcome: ${outcome.outcome === "selected" ? outcome.optionId : outcome.outcome}`;
  await say(ctx, text);
  return { stopReason: "end_turn" };
}

runAgent("edit-agent", prompt);
