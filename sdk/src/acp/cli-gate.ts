import { credentials } from "../cli/config.js";
import { Tapgate } from "../client.js";

/** What the CLI prints for itself: stderr only, since stdout carries the agent's protocol or output. */
export function logToStderr(message: string): void {
  process.stderr.write(`tapgate: ${message}\n`);
}

/**
 * The gate of `tapgate acp` / `tapgate run`. Missing credentials do not stop the agent: it starts,
 * and each permission request is refused with the fix named.
 */
export function cliGate(): Tapgate {
  const { url, apiKey } = credentials();
  if (!apiKey) logToStderr("not signed in: run `tapgate login` — until then every permission request is refused");
  return new Tapgate({ url, apiKey, onLog: (level, message) => level !== "debug" && logToStderr(message) });
}
