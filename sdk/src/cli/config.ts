/**
 * Where the CLI keeps its credentials: `$XDG_CONFIG_HOME/tapgate/config.json` (default
 * `~/.config/tapgate/config.json`), mode 0600 in a directory of mode 0700. Environment variables
 * win over the file.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { z } from "zod";
import { RULE_KEY_PATTERN } from "../private/fingerprint.js";

export const DEFAULT_URL = "http://localhost:8787";

export const configSchema = z.object({
  url: z.string().url(),
  apiKey: z.string().regex(/^tg_[0-9A-Za-z]{43}$/),
  keyId: z.string().optional(),
  keyPrefix: z.string().optional(),
  team: z.object({ id: z.string(), name: z.string() }).optional(),
  user: z.object({ id: z.string(), name: z.string(), email: z.string() }).optional(),
  /** The team's rule key (private mode's rule fingerprints, `tapgate rule-key`); `TAPGATE_RULE_KEY` wins. */
  ruleKey: z.string().regex(RULE_KEY_PATTERN).optional(),
});
export type CliConfig = z.infer<typeof configSchema>;

/** `$XDG_CONFIG_HOME/tapgate` (default `~/.config/tapgate`): the config and the pinned approvers. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CONFIG_HOME || join(homedir(), ".config"), "tapgate");
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(configDir(env), "config.json");
}

/** The stored config, or null when there is none (or it is unreadable: treated as signed out). */
export function readConfig(env: NodeJS.ProcessEnv = process.env): CliConfig | null {
  try {
    const parsed = configSchema.safeParse(JSON.parse(readFileSync(configPath(env), "utf8")));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/**
 * Writes the config: the directory is made (or tightened to) 0700, and the file is written beside
 * it as a new 0600 file and renamed over the old one, so the key is never readable by others,
 * not even for a moment through an older file's looser mode, and never half written.
 */
export function writeConfig(config: CliConfig, env: NodeJS.ProcessEnv = process.env): string {
  const path = configPath(env);
  writePrivateJson(path, config);
  return path;
}

/** `value` as JSON at `path`, the way `writeConfig` writes (0600 in a 0700 directory, renamed into place). */
export function writePrivateJson(path: string, value: unknown): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700); // mkdirSync leaves an existing directory's mode alone
  const temporary = `${path}.${process.pid}.tmp`;
  rmSync(temporary, { force: true });
  writeFileSync(temporary, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600, flag: "wx" });
  renameSync(temporary, path);
}

export function deleteConfig(env: NodeJS.ProcessEnv = process.env): void {
  rmSync(configPath(env), { force: true });
}

/**
 * The server URL and key an agent-side command uses: TAPGATE_URL / TAPGATE_API_KEY first,
 * then the config file written by `tapgate login`; and the rule key (`TAPGATE_RULE_KEY`, else the file's).
 */
export function credentials(env: NodeJS.ProcessEnv = process.env): {
  url: string;
  apiKey: string | undefined;
  ruleKey: string | undefined;
} {
  const stored = readConfig(env);
  const url = env.TAPGATE_URL || stored?.url || DEFAULT_URL;
  const ruleKey = env.TAPGATE_RULE_KEY || stored?.ruleKey || undefined;
  if (env.TAPGATE_API_KEY) return { url, apiKey: env.TAPGATE_API_KEY, ruleKey };
  // A stored key goes only to the server that issued it, never to whatever TAPGATE_URL says.
  return { url, apiKey: stored && sameServer(stored.url, url) ? stored.apiKey : undefined, ruleKey };
}

function sameServer(a: string, b: string): boolean {
  try {
    return new URL(a).origin === new URL(b).origin;
  } catch {
    return false;
  }
}
