#!/usr/bin/env node
/**
 * The `tapgate` command: one file per subcommand, dispatched here.
 * Logs and errors go to stderr; stdout belongs to the subcommand (the ACP proxy's stdout is the
 * agent's protocol stream, the Claude hook's stdout is its JSON answer).
 */
import { readFileSync } from "node:fs";

const COMMANDS: Record<string, { summary: string; run: (args: string[]) => Promise<number> }> = {
  login: { summary: "sign this machine in (device code) and store an agent key", run: lazy("./login.js") },
  logout: { summary: "forget (and revoke) this machine's agent key", run: lazy("./logout.js") },
  status: { summary: "which server, which team, which key, reachable?", run: lazy("./status.js") },
  acp: { summary: "ACP stdio proxy: tapgate acp [--decide phone|race] -- <agent command…>", run: lazy("./acp.js") },
  run: { summary: "headless ACP client: tapgate run [--prompt TEXT] -- <agent command…>", run: lazy("./run.js") },
  "claude-hook": { summary: "Claude Code PreToolUse / PermissionRequest hook", run: lazy("./claude-hook.js") },
  "codex-hook": { summary: "OpenAI Codex PermissionRequest hook", run: lazy("./codex-hook.js") },
  mcp: {
    summary: "stdio MCP server: approve (Claude Code permission prompt), request_approval",
    run: lazy("./mcp.js"),
  },
  "gemini-hook": { summary: "Gemini CLI BeforeTool hook", run: lazy("./gemini-hook.js") },
  trust: {
    summary: "private mode: show or accept approvers' changed passkeys (--list: the pins)",
    run: lazy("./trust.js"),
  },
  "rule-key": { summary: "private mode: the team's rule key: new | set <key> | show", run: lazy("./rule-key.js") },
  seal: { summary: "private mode: seal request params (stdin) for any HTTP client", run: lazy("./seal.js") },
};

/** Each subcommand module exports `main(args): Promise<number>` (the exit code). */
function lazy(path: string) {
  return async (args: string[]) => ((await import(path)) as { main: (args: string[]) => Promise<number> }).main(args);
}

export function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length));
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return `usage: tapgate <command> [options]\n\n${lines.join("\n")}\n\n  --version  print the version\n`;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  if (command === "--version" || command === "-v") {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  if (!command || command === "--help" || command === "-h" || command === "help") {
    process.stdout.write(usage());
    return command ? 0 : 2;
  }
  const entry = COMMANDS[command];
  if (!entry) {
    process.stderr.write(`tapgate: unknown command ${JSON.stringify(command)}\n\n${usage()}`);
    return 2;
  }
  return entry.run(args);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`tapgate: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
