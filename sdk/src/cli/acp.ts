/** `tapgate acp [--decide phone|race] [--timeout SECONDS] -- <agent command…>` */
import { agentExit, forwardSignals, spawnAgent } from "../acp/agent-process.js";
import { parseAgentArgs, wantsHelp } from "../acp/args.js";
import { cliGate, logToStderr } from "../acp/cli-gate.js";
import { readLines } from "../acp/ndjson.js";
import { AcpProxy, type DecideMode } from "../acp/proxy.js";

const USAGE = `usage: tapgate acp [--decide phone|race] [--timeout SECONDS] -- <agent command…>

Runs an ACP agent for your editor and sends its permission requests to Tapgate.
Configure the editor to launch \`tapgate acp -- <agent>\` instead of the agent.

  --decide phone   only Tapgate decides; the editor never sees the request (default)
  --decide race    the editor is asked too; the first answer wins, the other is withdrawn
  --timeout S      requests expire after S seconds (at most the team's request lifetime)

Without credentials (\`tapgate login\` or TAPGATE_API_KEY) the agent still runs, and every
permission request is refused.
`;

export async function main(args: string[]): Promise<number> {
  if (wantsHelp(args)) {
    process.stdout.write(USAGE);
    return 0;
  }
  const parsed = parseAgentArgs(args, { decideModes: ["phone", "race"], prompt: false });
  if ("error" in parsed) {
    process.stderr.write(`tapgate acp: ${parsed.error}\n\n${USAGE}`);
    return 2;
  }
  const gate = cliGate();
  const agent = spawnAgent(parsed.command);
  const exited = agentExit(agent, logToStderr);
  const stopForwarding = forwardSignals(agent, ["SIGINT", "SIGTERM", "SIGHUP"]);
  const proxy = new AcpProxy(agent.stdin as NonNullable<typeof agent.stdin>, process.stdout, {
    gate,
    decide: parsed.decide as DecideMode,
    timeoutMs: parsed.timeoutMs,
    command: parsed.command,
    log: logToStderr,
  });
  // A broken pipe on either side must not kill the proxy before it has closed the Tapgate sessions.
  agent.stdin?.on("error", () => undefined);
  process.stdout.on("error", () => undefined);
  readLines(
    agent.stdout as NonNullable<typeof agent.stdout>,
    (line) => proxy.fromAgent(line),
    () => undefined,
  );
  readLines(
    process.stdin,
    (line) => proxy.fromEditor(line),
    () => agent.stdin?.end(),
  );
  const code = await exited;
  proxy.agentExited();
  stopForwarding();
  process.stdin.destroy();
  return code;
}
