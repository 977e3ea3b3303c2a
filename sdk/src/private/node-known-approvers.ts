/**
 * The pinned approvers on this machine: `$XDG_CONFIG_HOME/tapgate/known-approvers.json` (default
 * `~/.config/tapgate/`), keyed by service origin, then team id, then user id, each the passkey
 * that person endorses device keys with. Written like the config (0600, renamed into place).
 *
 * Owns: the file. Does not own: what a pin means (`recipients.ts`) or `tapgate trust` (the CLI).
 * Node-only.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { configDir, writePrivateJson } from "../cli/config.js";
import { type KnownApprovers, type PinnedPasskey, pinnedPasskeySchema, type TeamPins } from "./recipients.js";

const fileSchema = z.record(z.string(), z.record(z.string(), z.record(z.string(), pinnedPasskeySchema)));
export type KnownApproversFile = z.infer<typeof fileSchema>;

export function knownApproversPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(configDir(env), "known-approvers.json");
}

/**
 * Every pin in the file; none when there is no file yet. A file that is there but does not parse
 * throws: read as empty, it would pin whatever keys the service shows next.
 */
export function readKnownApprovers(path: string): KnownApproversFile {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw err;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) throw new Error(`${path} is not a valid pin file: fix or remove it`);
  return parsed.data;
}

/** The file as a `KnownApprovers`: read on each call, so a `tapgate trust` in another process counts at once. */
export function fileKnownApprovers(path = knownApproversPath()): KnownApprovers {
  return {
    pins: (service, teamId): TeamPins => ({ ...readKnownApprovers(path)[service]?.[teamId] }),
    pin: (service, teamId, userId, passkey) => pinIn(path, service, teamId, userId, passkey),
  };
}

export function pinIn(path: string, service: string, teamId: string, userId: string, passkey: PinnedPasskey): void {
  const file = readKnownApprovers(path);
  const teams = file[service] ?? {};
  file[service] = { ...teams, [teamId]: { ...teams[teamId], [userId]: passkey } };
  writePrivateJson(path, file);
}
