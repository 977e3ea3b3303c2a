/** The agent as a child process: its stderr is the user's, its stdin/stdout are the protocol. */
import { type ChildProcess, spawn } from "node:child_process";
import { constants } from "node:os";

/** Exit code when the agent command could not be started (as a shell would say). */
export const NOT_STARTED = 127;

/** `ownGroup`: a terminal's Ctrl-C then reaches only us, and we decide what it means for the agent. */
export function spawnAgent(command: string[], { ownGroup = false } = {}): ChildProcess {
  const [file, ...args] = command;
  return spawn(file as string, args, { stdio: ["pipe", "pipe", "inherit"], detached: ownGroup });
}

/** Resolves once the agent is gone and its stdout is drained, with a shell-style exit code. */
export function agentExit(child: ChildProcess, log: (message: string) => void): Promise<number> {
  return new Promise((resolve) => {
    child.once("error", (err) => {
      if (child.pid !== undefined) return; // a failed kill(), not a failed start
      log(`cannot start the agent ${JSON.stringify(child.spawnfile)}: ${err.message}`);
      resolve(NOT_STARTED);
    });
    child.once("close", (code, signal) => {
      resolve(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0));
    });
  });
}

/** Whoever stops us means to stop the agent; we exit when it does, with its code. */
export function forwardSignals(child: ChildProcess, signals: NodeJS.Signals[]): () => void {
  const handlers = signals.map((signal) => {
    const handler = () => child.kill(signal);
    process.on(signal, handler);
    return [signal, handler] as const;
  });
  return () => {
    for (const [signal, handler] of handlers) process.off(signal, handler);
  };
}
