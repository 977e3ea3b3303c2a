import { type TeamLimits, type TeamPolicy, teamPolicySchema } from "../sdk/src/human/policy";
import { forbidsStandingAnswer } from "../sdk/src/permission-prompt";
import type { PermissionOption } from "../sdk/src/protocol";

/** Team policy (the schema lives in sdk/src/human/policy.ts); stored as JSON on the team, defaults filled in. */
export { type TeamLimits, type TeamPolicy, teamPolicySchema };

export const DEFAULT_POLICY: TeamPolicy = teamPolicySchema.parse({});

export function parsePolicy(json: string | null | undefined): TeamPolicy {
  const parsed = teamPolicySchema.safeParse(JSON.parse(json || "{}"));
  return parsed.success ? parsed.data : DEFAULT_POLICY;
}

/** The team's limits; a policy stored before limits existed (a gate's old copy) has the defaults. */
export function limitsOf(policy: TeamPolicy): TeamLimits {
  return (policy as Partial<TeamPolicy>).limits ?? DEFAULT_POLICY.limits;
}

/** The team's high-risk patterns and quorum; a policy stored before tiers existed (a gate's old copy) has the defaults. */
export function highRiskOf(policy: TeamPolicy): { patterns: TeamPolicy["highRisk"]; quorum: 1 | 2 } {
  const p = policy as Partial<TeamPolicy>;
  return { patterns: p.highRisk ?? DEFAULT_POLICY.highRisk, quorum: p.highRiskQuorum ?? 1 };
}

/**
 * The options humans are offered: with once-only on, standing rules are hidden; a request whose
 * `_meta` asks for no standing answer (`matchedAskRule`, `suppress_always_allow_rule`) loses its
 * `allow_always` and `reject_always` options.
 */
export function offeredOptions(
  options: PermissionOption[],
  policy: TeamPolicy,
  requestMeta?: unknown,
): PermissionOption[] {
  if (policy.onceOnlyOptions) return options.filter((o) => o.kind === "allow_once" || o.kind === "reject_once");
  if (forbidsStandingAnswer(requestMeta)) return options.filter((o) => !PERSISTENT_KINDS.has(o.kind));
  return options;
}

const PERSISTENT_KINDS = new Set(["allow_always", "reject_always"]);

/** How long a request may wait: the team lifetime, or less if the agent asked for less. */
export function requestLifetimeMs(policy: TeamPolicy, agentTimeoutMs: number | undefined): number {
  return agentTimeoutMs === undefined ? policy.lifetimeMs : Math.min(policy.lifetimeMs, agentTimeoutMs);
}

/** A team's policy with its `policy_version` in D1: a copy is taken up only when it is newer. */
export interface VersionedPolicy {
  policy: TeamPolicy;
  version: number;
}
