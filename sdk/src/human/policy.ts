/** The team policy (`GET`/`PUT /v1/policy`): stored as JSON on the team, defaults filled in. */
import { z } from "zod";

const MINUTE = 60_000;

export const teamPolicySchema = z.object({
  lifetimeMs: z
    .number()
    .int()
    .min(MINUTE)
    .max(24 * 60 * MINUTE)
    .default(10 * MINUTE),
  onceOnlyOptions: z.boolean().default(true),
  notify: z.enum(["session_owner", "all_approvers"]).default("session_owner"),
  deciders: z.enum(["any_approver", "session_owner"]).default("any_approver"),
  lockScreen: z.enum(["tool_title", "generic"]).default("tool_title"),
});
export type TeamPolicy = z.infer<typeof teamPolicySchema>;

/** `PUT /v1/policy`: any subset of the fields (the rest take their defaults), nothing else. */
export const policyBodySchema = teamPolicySchema.strict();
export type PolicyBody = z.input<typeof policyBodySchema>;
