/**
 * `tapgate mcp [--timeout SECONDS]`: a stdio MCP server with Tapgate's `approve` and
 * `request_approval` tools (`mcp/tools.ts`), for Claude Code's `--permission-prompt-tool` and any
 * MCP client. stdout is the MCP stream; logs go to stderr.
 *
 * One Tapgate session per process (`mcp-<uuid>`): each tool call asks on its own connection to
 * that session, closed with the answer. When the client cancels a call, the request is cancelled
 * on Tapgate; when the client goes away (stdin closes), every call still waiting is, and the
 * process exits. A missing key or an unreachable server is a deny, asked again on the next call.
 *
 * Owns: the command, its credentials and session. Does not own: the tools (`mcp/tools.ts`) or
 * one ask (`hooks/command.ts` `askOnce`).
 */
import { McpServer } from "@modelcontextprotocol/server";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { askOnce, MAX_TIMEOUT_S, parseTimeout } from "../hooks/command.js";
import { registerTapgateTools } from "../mcp/tools.js";
import type { RequestPermissionParams } from "../protocol.js";
import { baseUrl } from "./account.js";
import { credentials } from "./config.js";
import { version } from "./main.js";
import { oldTextReader } from "./old-text.js";

const USAGE = `usage: tapgate mcp [--timeout SECONDS]

A stdio MCP server with two tools: approve (Claude Code's --permission-prompt-tool) and
request_approval (any MCP agent). Each call waits for a human on Tapgate; every failure is a deny.
--timeout (or TAPGATE_MCP_TIMEOUT): how long a request may wait, in seconds; default and most:
the team's request lifetime.
`;

export async function main(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(USAGE);
    return 0;
  }
  // The team's lifetime caps every request: asking for the longest any team allows means "the team's".
  const timeoutS = parseTimeout(args, process.env.TAPGATE_MCP_TIMEOUT, MAX_TIMEOUT_S, "mcp");
  if (typeof timeoutS === "string") {
    process.stderr.write(`tapgate mcp: ${timeoutS}\n${USAGE}`);
    return 2;
  }
  const server = new McpServer({ name: "tapgate", version: version() });
  // Every call still waiting when the client goes away drops its connection: `agent_disconnected` on Tapgate.
  const gone = new AbortController();
  const sessionId = `mcp-${crypto.randomUUID()}`;
  const ask = (request: RequestPermissionParams, signal?: AbortSignal) => {
    const client = server.server.getClientVersion();
    const meta = { title: client?.title ?? client?.name ?? "MCP client", agent: { name: client?.name ?? "mcp" } };
    const target = targetOf(timeoutS);
    if (typeof target === "string") return Promise.resolve({ failed: `Tapgate: ${target}` });
    return askOnce(target, sessionId, { ...meta, cwd: process.cwd() }, request, {
      cancel: signal,
      disconnect: gone.signal,
    });
  };
  registerTapgateTools(server, { sessionId, ask, readExisting: oldTextReader(process.cwd()) });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    // At once, before the MCP server's own close aborts each call (which would withdraw it instead).
    const goneNow = () => {
      gone.abort();
      resolve();
    };
    transport.onclose = goneNow;
    process.stdin.once("end", goneNow);
  });
  await server.connect(transport);
  await closed;
  await server.close();
  return 0;
}

/** Where to ask, read at each call (a `tapgate login` meanwhile counts), or why there is nowhere. */
function targetOf(timeoutS: number) {
  const { url, apiKey, ruleKey } = credentials();
  if (!apiKey) return "not signed in — run `tapgate login` or set TAPGATE_API_KEY";
  try {
    return { url: baseUrl(url), apiKey, ruleKey, timeoutMs: timeoutS * 1000 };
  } catch (err) {
    return (err as Error).message;
  }
}
