/**
 * The operator's ceilings: deployment settings (wrangler.toml `[vars]`) that bound what one
 * tenant can take of the shared service, whatever its owners set. A team's own limits
 * (`policy.limits`) are chosen within them; nothing a tenant sends can raise them.
 *
 * Owns: reading the settings (with their defaults) and the refusal a ceiling gives. Does not
 * own: the counting (D1 statements for keys, teams and members; the team's hub for stored
 * bytes), the team's own limits (`sdk/src/human/policy.ts`).
 */
import { z } from "zod";
import { DomainError } from "./errors";
import type { Env } from "./types";

const MIB = 1024 * 1024;

/** Each ceiling: its setting in `Env` and its default (docs/limits.md "Operator ceilings"). */
export const CEILING_SETTINGS = {
  storedBytesPerTeamPerDay: { setting: "MAX_STORED_BYTES_PER_TEAM_PER_DAY", fallback: 4 * MIB },
  keysPerTeam: { setting: "MAX_KEYS_PER_TEAM", fallback: 50 },
  teamsPerPerson: { setting: "MAX_TEAMS_PER_PERSON", fallback: 3 },
  membersPerTeam: { setting: "MAX_MEMBERS_PER_TEAM", fallback: 100 },
  retentionDays: { setting: "MAX_RETENTION_DAYS", fallback: 90 },
} as const satisfies Record<string, { setting: keyof Env; fallback: number }>;

export type CeilingName = keyof typeof CEILING_SETTINGS;
export type Ceilings = Record<CeilingName, number>;

const settingSchema = z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER);

/** The ceilings of this deployment: each setting when it is a whole number ≥ 1, else its default. */
export function ceilingsOf(env: Env): Ceilings {
  const entries = Object.entries(CEILING_SETTINGS).map(([name, { setting, fallback }]) => {
    const parsed = settingSchema.safeParse(env[setting]);
    return [name, parsed.success ? parsed.data : fallback];
  });
  return Object.fromEntries(entries) as Ceilings;
}

/** `429 quota_exceeded {limit}`: a ceiling of the deployment, which no retry soon will lift. */
export function overCeiling(limit: CeilingName, ceiling: number, what: string): DomainError {
  return new DomainError("quota_exceeded", `this server allows at most ${ceiling} ${what}`, {
    extra: { limit, ceiling },
  });
}
