/**
 * Whether a change of the team policy weakens it (docs/human-api.md "Weakening the policy"): a
 * weakening needs an owner's passkey; anything else, an admin's session. Pure, unit-tested beside it.
 *
 * Owns: the list of what counts as weaker, one entry per setting. A new setting that can give
 * power away adds its entry to `CHECKS`. `privacy` counts either way: turning private mode off
 * lets the service read requests again, and turning it on changes who can read them (only the
 * devices with keys), so both are an owner's, with their passkey. Does not own: the
 * step-up (`team/policy-step-up.ts`), who may change the policy (`routes/policy.ts`,
 * `team/policy.ts`), the policy's shape (`sdk/src/human/policy.ts`).
 */
import { CHANNELS } from "../sdk/src/human/channels";
import type { HighRiskPattern, TeamPolicy } from "../sdk/src/human/policy";
import { canonicalJson } from "./crypto";
import { highRiskOf } from "./policy";

/** A setting whose change can weaken the policy. */
export type WeakenedSetting = "highRisk" | "highRiskQuorum" | "deciders" | "lockScreen" | "escalation" | "privacy";

/** One way a change weakens the policy: the setting, and what the change does, in words for a person. */
export interface Weakening {
  setting: WeakenedSetting;
  says: string;
}

interface Check extends Weakening {
  weakens(before: TeamPolicy, after: TeamPolicy): boolean;
}

/** True when `after` is further along `order` (strictest first) than `before`; a value not in it counts as loosest. */
function looser<T>(order: readonly T[], before: T, after: T): boolean {
  const rank = (v: T) => (order.includes(v) ? order.indexOf(v) : order.length);
  return rank(after) > rank(before);
}

/** A pattern as the matcher sees it (case ignored, runs of spaces as one), every field of it. */
function patternKey(p: HighRiskPattern): string {
  const norm = (v: unknown) => (typeof v === "string" ? v.toLowerCase().replace(/\s+/g, " ") : v);
  return canonicalJson(Object.fromEntries(Object.entries(p).map(([field, v]) => [field, norm(v)])));
}

/**
 * A pattern of `before` that `after` does not hold as it was: removed, or changed (a changed
 * pattern matches other requests, so it counts as narrowed; adding patterns never weakens).
 */
function patternDropped(before: TeamPolicy, after: TeamPolicy): boolean {
  const kept = new Set(highRiskOf(after).patterns.map(patternKey));
  return highRiskOf(before).patterns.some((p) => !kept.has(patternKey(p)));
}

/**
 * The chat channels and pagers a ladder reaches: places outside Tapgate where a request's
 * lock-screen line is read, possibly by people outside the team.
 */
function channelsReached(policy: TeamPolicy): Set<string> {
  const channels: readonly string[] = CHANNELS;
  return new Set(policy.escalation.map((step) => step.via).filter((via) => channels.includes(via)));
}

/** Each choice setting's values, strictest first (the unit test checks every value is placed). */
export const STRICTEST_FIRST = {
  deciders: ["session_owner", "any_approver"],
  lockScreen: ["generic", "tool_title"],
} as const satisfies { deciders: readonly TeamPolicy["deciders"][]; lockScreen: readonly TeamPolicy["lockScreen"][] };

const CHECKS: readonly Check[] = [
  { setting: "highRisk", says: "removes or narrows a high-risk pattern", weakens: patternDropped },
  {
    setting: "highRiskQuorum",
    says: "lowers the high-risk quorum",
    weakens: (before, after) => highRiskOf(after).quorum < highRiskOf(before).quorum,
  },
  {
    setting: "deciders",
    says: "widens who may decide",
    weakens: (before, after) => looser(STRICTEST_FIRST.deciders, before.deciders, after.deciders),
  },
  {
    setting: "lockScreen",
    says: "shows more on the lock screen",
    weakens: (before, after) => looser(STRICTEST_FIRST.lockScreen, before.lockScreen, after.lockScreen),
  },
  {
    setting: "escalation",
    says: "sends requests to a chat channel or pager the ladder did not reach",
    weakens: (before, after) => {
      const reached = channelsReached(before);
      return [...channelsReached(after)].some((channel) => !reached.has(channel));
    },
  },
  {
    setting: "privacy",
    says: "switches private mode on or off (who can read requests)",
    weakens: (before, after) => before.privacy !== after.privacy,
  },
];

/** Every way `after` weakens `before`; empty when the change keeps or strengthens what these settings guard. */
export function policyWeakenings(before: TeamPolicy, after: TeamPolicy): Weakening[] {
  return CHECKS.filter((c) => c.weakens(before, after)).map(({ setting, says }) => ({ setting, says }));
}
