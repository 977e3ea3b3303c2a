/**
 * `tapgate logout`: revokes this machine's stored key on the server (best effort) and deletes the
 * config file. Exit 0 even when the server is unreachable: the file is gone either way, and the
 * output says whether the key still needs revoking.
 */
import { existsSync } from "node:fs";
import { baseUrl, callServer, detail, keyHint, Unreachable } from "./account.js";
import { type CliConfig, configPath, deleteConfig, readConfig } from "./config.js";

const say = (stream: NodeJS.WriteStream, line: string) => stream.write(`${line}\n`);

export async function main(args: string[]): Promise<number> {
  if (args.length > 0) {
    say(process.stderr, "usage: tapgate logout");
    return 2;
  }
  const path = configPath();
  const stored = readConfig();
  if (stored) await revoke(stored);
  if (existsSync(path)) {
    deleteConfig();
    say(process.stdout, `Removed ${path}.`);
    if (stored?.ruleKey) {
      say(
        process.stderr,
        "The team's rule key was stored there too: after the next login, `tapgate rule-key set` it again.",
      );
    }
  } else {
    say(process.stdout, `Not signed in (no ${path}); nothing to do.`);
  }
  if (process.env.TAPGATE_API_KEY) say(process.stderr, "Note: TAPGATE_API_KEY is still set in this environment.");
  return 0;
}

/** What became of the key: said on stdout when it is revoked, on stderr when it may still work. */
async function revoke(stored: CliConfig): Promise<void> {
  const key = keyHint(stored.apiKey);
  const fallback = `revoke it in Tapgate (${stored.url})`;
  try {
    const reply = await callServer(baseUrl(stored.url), "/v1/agent/me", { method: "DELETE", apiKey: stored.apiKey });
    if (reply.status >= 200 && reply.status < 300) say(process.stdout, `Revoked key ${key}.`);
    else if (reply.status === 401) say(process.stdout, `Key ${key} was already revoked.`);
    else say(process.stderr, `Could not revoke key ${key}: ${detail(reply)}; ${fallback}.`);
  } catch (error) {
    // Unreachable, or a URL the key may not be sent to (plain http:// to another machine).
    if (!(error instanceof Unreachable || error instanceof TypeError)) throw error;
    say(process.stderr, `Could not revoke key ${key} (${error.message}); ${fallback}.`);
  }
}
