/** Runs a `tapgate *-hook` command as its agent does: the built binary, hook JSON on stdin, an empty home. */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, vi } from "vitest";
import { ROOT } from "../../scripts/local-worker.mjs";
import type { Approval } from "../../sdk/src/approval";
import type { Person } from "./helpers";

/** An empty home, so a developer's own `tapgate login` never leaks into a test. */
const home = mkdtempSync(join(tmpdir(), "tapgate-hook-home-"));

export interface HookRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runHook(
  command: string,
  input: unknown,
  opts: { args?: string[]; env?: Record<string, string> } = {},
): Promise<HookRun> {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, XDG_CONFIG_HOME: home, ...opts.env };
  delete env.TAPGATE_HOOK_TIMEOUT;
  if (!opts.env?.TAPGATE_API_KEY) delete env.TAPGATE_API_KEY;
  if (!opts.env?.TAPGATE_URL) delete env.TAPGATE_URL;
  const child = spawn(process.execPath, ["sdk/dist/cli/main.js", command, ...(opts.args ?? [])], {
    cwd: ROOT,
    env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => {
    stdout += d;
  });
  child.stderr.on("data", (d) => {
    stderr += d;
  });
  child.stdin.end(typeof input === "string" ? input : JSON.stringify(input));
  return once(child, "close").then(([code]) => ({ code: code as number | null, stdout, stderr }));
}

/** Exactly one JSON line on stdout and exit 0: the agent parses the whole of it. */
export function answerOf(run: HookRun): unknown {
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout.trim().split("\n")).toHaveLength(1);
  return JSON.parse(run.stdout);
}

/** The index is written just after each resolution: wait for it rather than guessing how long. */
export function waitForResolved(person: Person, sessionId: string): Promise<Approval> {
  return vi.waitFor(
    async () => {
      const res = await person.fetch("/v1/approvals?state=resolved&scope=mine&limit=200");
      const { approvals } = (await res.json()) as { approvals: Approval[] };
      const found = approvals.find((a) => a.sessionId === sessionId);
      if (!found) throw new Error("not resolved yet");
      return found;
    },
    { timeout: 10_000, interval: 20 },
  );
}
