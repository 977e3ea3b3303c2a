/** `tapgate run [--decide phone] [--timeout SECONDS] [--prompt TEXT] -- <agent command…>` */
import { basename } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { agentExit, forwardSignals, spawnAgent } from "../acp/agent-process.js";
import { type AgentArgs, parseAgentArgs, wantsHelp } from "../acp/args.js";
import { cliGate, logToStderr } from "../acp/cli-gate.js";
import { acpElicitationHandler, acpPermissionHandler } from "../acp/handler.js";
import { CANCEL_ANSWER_GRACE_MS, TAPGATE_CLIENT_CAPABILITIES } from "../acp/proxy.js";
import { sessionsOf } from "../acp/sessions.js";
import { Subagents } from "../acp/subagents.js";
import type { SessionMeta } from "../client.js";
import { progressLine } from "../progress-line.js";

const STOP_CODES: Record<acp.StopReason, number> = {
  end_turn: 0,
  max_tokens: 3,
  max_turn_requests: 4,
  refusal: 5,
  cancelled: 130,
};

const USAGE = `usage: tapgate run [--prompt TEXT] [--timeout SECONDS] -- <agent command…>

Runs one prompt turn of an ACP agent without an editor (scripts, CI), in the current directory.
The prompt is --prompt, else stdin. The agent's messages and tool calls are printed as they
stream; its permission requests and questions (elicitation/create) go to Tapgate (refused, or
cancelled, when not signed in or unreachable).

  --decide phone   Tapgate decides (the only mode: there is no editor to ask)
  --timeout S      permission requests expire after S seconds

Ctrl-C cancels the turn (session/cancel) and waits for it to end; a second Ctrl-C stops the agent.

exit codes (the turn's stop reason):
  0 end_turn   3 max_tokens   4 max_turn_requests   5 refusal   130 cancelled
  1 the agent failed (did not start, crashed, or answered with an error)   2 usage
`;

export async function main(args: string[]): Promise<number> {
  if (wantsHelp(args)) {
    process.stdout.write(USAGE);
    return 0;
  }
  const parsed = parseAgentArgs(args, { decideModes: ["phone"], prompt: true });
  const prompt = "error" in parsed ? undefined : (parsed.prompt ?? (await readPrompt()));
  const problem = "error" in parsed ? parsed.error : prompt?.trim() ? undefined : "no prompt: give --prompt or stdin";
  if (problem || "error" in parsed || prompt === undefined) {
    process.stderr.write(`tapgate run: ${problem}\n\n${USAGE}`);
    return 2;
  }
  return runTurn(parsed, prompt);
}

async function readPrompt(): Promise<string | undefined> {
  if (process.stdin.isTTY) return undefined;
  let text = "";
  for await (const chunk of process.stdin) text += chunk;
  return text;
}

async function runTurn({ command, timeoutMs }: AgentArgs, prompt: string): Promise<number> {
  const gate = cliGate();
  const agent = spawnAgent(command, { ownGroup: true });
  const exited = agentExit(agent, logToStderr);
  const stopForwarding = forwardSignals(agent, ["SIGTERM", "SIGHUP"]);
  const out = new Printer();
  const turn = new AbortController();
  /** Resolves once a Ctrl-C's `session/cancel` is out (at once while there was none). */
  let cancelHeard: Promise<unknown> = Promise.resolve();
  let agentInfo: { name: string; version?: string } | undefined;
  const subagents = new Subagents();
  const title = prompt.trim().split("\n")[0]?.slice(0, 80);
  /** The turn's session is titled by the prompt; a subagent's names it as its parent. */
  const meta = (sessionId: string): SessionMeta => {
    const parent = subagents.parentMeta(sessionId, title);
    return { title, agent: agentInfo ?? { name: basename(command[0] ?? "agent") }, ...(parent ? { parent } : {}) };
  };
  const ask = acpPermissionHandler(gate, {
    timeoutMs,
    onLog: (level, message) => level !== "debug" && logToStderr(message),
    onProgress: (progress) => logToStderr(progressLine(progress)),
    meta,
  });
  const elicit = acpElicitationHandler(gate, {
    timeoutMs,
    onLog: (level, message) => level !== "debug" && logToStderr(message),
    meta,
  });
  const app = acp.client({ name: "tapgate run" }).onRequest("session/request_permission", async (ctx) => {
    const title = out.titleOf(ctx.params.toolCall);
    out.line(`[permission] ${title}: asking Tapgate`);
    // A cancelled turn cancels its pending permission requests (ACP), whatever the agent does.
    const answer = await ask({ ...ctx, signal: AbortSignal.any([ctx.signal, turn.signal]) });
    await cancelHeard;
    const chosen = ctx.params.options.find(
      (o) => answer.outcome.outcome === "selected" && o.optionId === answer.outcome.optionId,
    );
    out.line(`[permission] ${title}: ${chosen ? chosen.name : "cancelled"}`);
    return answer;
  });
  app.onRequest("elicitation/create", async (ctx) => {
    out.line(`[question] ${ctx.params.message.split("\n")[0]?.slice(0, 80)}: asking Tapgate`);
    const answer = await elicit({ ...ctx, signal: AbortSignal.any([ctx.signal, turn.signal]) });
    await cancelHeard;
    out.line(`[question] answered: ${answer.action}`);
    return answer;
  });
  const stdin = agent.stdin as NonNullable<typeof agent.stdin>;
  stdin.on("error", () => undefined); // an agent that died is reported by its exit
  const stream = acp.ndJsonStream(
    Writable.toWeb(stdin),
    Readable.toWeb(agent.stdout as NonNullable<typeof agent.stdout>),
  );
  const conn = app.connect(
    mirroringUpdates(stream, (message) => {
      subagents.observe(message.params);
      sessionsOf(gate).mirror(message.params, meta);
    }),
  );
  let interrupts = 0;
  let sessionId: string | undefined;
  const onInterrupt = () => {
    interrupts++;
    if (interrupts > 1 || !sessionId) {
      agent.kill("SIGKILL");
      return;
    }
    logToStderr("cancelling the turn (Ctrl-C again to stop the agent)");
    // ACP cancellation: the agent hears `session/cancel` before its pending permission requests are
    // answered `cancelled`, so it can tell a cancelled turn from a refused tool call.
    // The requests are withdrawn at once (no later answer reaches the agent), but answered only once
    // the notification has left and the agent had a moment to read it (the proxy's grace, too).
    cancelHeard = conn.agent
      .notify("session/cancel", { sessionId })
      .catch(() => undefined)
      .then(() => new Promise((resolve) => setTimeout(resolve, CANCEL_ANSWER_GRACE_MS)));
    turn.abort();
  };
  process.on("SIGINT", onInterrupt);
  const died = exited.then((code) => {
    throw new Error(`the agent exited (code ${code}) before the turn ended`);
  });
  try {
    const stopReason = await Promise.race([
      died,
      (async () => {
        const init: acp.InitializeResponse = await conn.agent.request("initialize", {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: TAPGATE_CLIENT_CAPABILITIES,
        });
        agentInfo = init.agentInfo ? { name: init.agentInfo.name, version: init.agentInfo.version } : undefined;
        const session = await conn.agent.buildSession(process.cwd()).start();
        sessionId = session.sessionId;
        return streamTurn(session, prompt, out);
      })(),
    ]);
    out.end();
    return STOP_CODES[stopReason] ?? 1;
  } catch (err) {
    out.end();
    if (interrupts > 0) return STOP_CODES.cancelled;
    logToStderr(err instanceof Error ? err.message : String(err));
    return 1;
  } finally {
    process.off("SIGINT", onInterrupt);
    conn.close();
    stdin.end();
    gate.close();
    await stopAgent(agent, exited);
    stopForwarding();
  }
}

/**
 * Tool calls reach Tapgate as they arrive, ahead of any permission request that names them, so
 * the card can show what the request only refers to by id.
 */
function mirroringUpdates(stream: acp.Stream, mirror: (message: { params?: unknown }) => void): acp.Stream {
  const tap = new TransformStream<acp.AnyMessage, acp.AnyMessage>({
    transform(message, controller) {
      if ("method" in message && message.method === "session/update" && !("id" in message)) mirror(message);
      controller.enqueue(message);
    },
  });
  void stream.readable.pipeTo(tap.writable).catch(() => undefined);
  return { writable: stream.writable, readable: tap.readable };
}

async function streamTurn(session: acp.ActiveSession, prompt: string, out: Printer): Promise<acp.StopReason> {
  const done = session.prompt(prompt);
  const updates = (async () => {
    for (;;) {
      const message = await session.nextUpdate();
      if (message.kind === "stop") return message.stopReason;
      out.update(message.update);
    }
  })();
  // A prompt that fails never queues a stop message: its error ends the wait instead.
  return Promise.race([updates, done.then(() => updates)]);
}

/** An agent is given a moment to exit on its own once its stdin closes. */
async function stopAgent(agent: ReturnType<typeof spawnAgent>, exited: Promise<number>): Promise<void> {
  const grace = setTimeout(() => agent.kill("SIGTERM"), 3_000);
  await exited;
  clearTimeout(grace);
}

/** Plain text for humans and logs: message text as it streams, one line per tool call state. */
class Printer {
  #atLineStart = true;
  readonly #titles = new Map<string, string>();

  update(update: acp.SessionUpdate): void {
    if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
      this.#write(update.content.text);
    } else if (update.sessionUpdate === "tool_call") {
      this.#titles.set(update.toolCallId, update.title);
      this.line(`[tool ${update.status ?? "pending"}] ${update.title}`);
    } else if (update.sessionUpdate === "tool_call_update") {
      if (update.title) this.#titles.set(update.toolCallId, update.title);
      if (update.status) this.line(`[tool ${update.status}] ${this.titleOf(update)}`);
    }
  }

  titleOf(toolCall: { toolCallId: string; title?: string | null }): string {
    return toolCall.title ?? this.#titles.get(toolCall.toolCallId) ?? toolCall.toolCallId;
  }

  line(text: string): void {
    this.end();
    this.#write(`${text}\n`);
  }

  end(): void {
    if (!this.#atLineStart) this.#write("\n");
  }

  #write(text: string): void {
    if (!text) return;
    process.stdout.write(text);
    this.#atLineStart = text.endsWith("\n");
  }
}
