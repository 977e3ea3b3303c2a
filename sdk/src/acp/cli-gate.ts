import { baseUrl } from "../cli/account.js";
import { credentials } from "../cli/config.js";
import { Tapgate } from "../client.js";

/** What the CLI prints for itself: stderr only, since stdout carries the agent's protocol or output. */
export function logToStderr(message: string): void {
  process.stderr.write(`tapgate: ${message}\n`);
}

/**
 * The gate of `tapgate acp` / `tapgate run`. Missing credentials do not stop the agent: it starts,
 * and each permission request is refused with the fix named. A URL that is not allowed (plain
 * http:// to another machine) throws before the agent starts.
 */
export function cliGate(): Tapgate {
  const { url: configured, apiKey, ruleKey } = credentials();
  const url = baseUrl(configured);
  if (!apiKey) logToStderr("not signed in: run `tapgate login` — until then every permission request is refused");
  return new Tapgate({ url, apiKey, ruleKey, onLog: (level, message) => level !== "debug" && logToStderr(message) });
}
