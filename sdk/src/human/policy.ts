/** The team policy (`GET`/`PUT /v1/policy`): stored as JSON on the team, defaults filled in. */
import { z } from "zod";
import { privacySchema } from "../private/sealed.js";
import { authenticationResponseSchema } from "./auth.js";
import { escalationViaSchema } from "./channels.js";

const MINUTE = 60_000;
const KIB = 1024;

const int = (min: number, max: number, fallback: number) => z.number().int().min(min).max(max).default(fallback);

/**
 * The team's quotas (`limits`, docs/limits.md): what one team may take of the shared service.
 * Only owners change them. Every field has a default, so `{}` is the default limits.
 */
export const teamLimitsSchema = z
  .object({
    /** Requests created per API key per minute: the token bucket's refill rate. */
    requestsPerKeyPerMinute: int(1, 6_000, 120),
    /** Requests a key may create at once before the rate applies: the bucket's size. The default is over
     * the 32 pending requests one session may hold, so a full session meets its own limit first. */
    burstPerKey: int(1, 1_000, 40),
    /** Pending requests of the whole team, across all its sessions and keys. */
    pendingPerTeam: int(1, 10_000, 500),
    /** Pending requests of one API key, across all its sessions. */
    pendingPerKey: int(1, 10_000, 100),
    /** Bytes of a request's snapshot that are stored (gate, D1, live feed); the rest is cut, with a marker. */
    storedBytesPerRequest: int(4 * KIB, 256 * KIB, 256 * KIB),
    /** Days resolved requests and agent sessions are kept (the audit log is kept whole). */
    retentionDays: int(1, 3_650, 90),
  })
  .strict();
export type TeamLimits = z.infer<typeof teamLimitsSchema>;

/** The names of the team limits, as a refusal's `limit` names them. */
export type LimitName = keyof TeamLimits;

/**
 * A high-risk pattern (docs/state-machine.md "Risk tiers"): globs of `sdk/src/request-match.ts`
 * over the request's facts, matched ignoring case; every field it names must match. A `command`
 * pattern is tried on the whole command line and on every simple command the shell would run in
 * it (`sdk/src/shell/commands.ts`); `writes` on every path the request may write (at any `/`
 * boundary); `input` on every string in the tool's `rawInput`.
 */
export const highRiskPatternSchema = z
  .object({
    kind: z.string().min(1).max(64).optional(),
    command: z.string().min(1).max(256).optional(),
    title: z.string().min(1).max(256).optional(),
    writes: z.string().min(1).max(256).optional(),
    input: z.string().min(1).max(256).optional(),
  })
  .strict()
  .refine((p) => Object.values(p).some((field) => field !== undefined), {
    message: "a high-risk pattern names at least one of kind, command, title, writes, input",
  });
export type HighRiskPattern = z.infer<typeof highRiskPatternSchema>;

/**
 * What counts as high-risk until a team says otherwise: destructive and history-rewriting
 * commands; writes to keys, secrets, shell start-up files and CI workflows (whatever tool makes
 * them); MCP tools whose arguments drop or empty a database table.
 */
export const DEFAULT_HIGH_RISK: HighRiskPattern[] = [
  { command: "git push --force*" },
  { command: "git push -f*" },
  { command: "git push * --force*" },
  { command: "git push * -f*" },
  { command: "git reset --hard*" },
  { command: "rm -rf *" },
  { command: "rm -fr *" },
  { command: "rm -r -f *" },
  { command: "sudo rm *" },
  { command: "*DROP TABLE*" },
  { command: "*DROP DATABASE*" },
  { command: "*TRUNCATE TABLE*" },
  { command: "terraform destroy*" },
  { command: "kubectl delete*" },
  ...[".ssh", ".ssh/*", ".env*", "*.pem", ".github/workflows/*"].map((writes) => ({ writes })),
  ...[".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin"].map(
    (writes) => ({ writes }),
  ),
  { writes: ".config/fish/config.fish" },
  ...["*DROP TABLE*", "*DROP DATABASE*", "*TRUNCATE *"].map((input) => ({ title: "mcp_*", input })),
];

/** Who an escalation step reaches: the session's owner, every member who may decide, or these members. */
export const escalationTargetSchema = z.union([
  z.enum(["session_owner", "all_approvers"]),
  z
    .array(z.string().regex(/^usr_[0-9A-Za-z]+$/, "not a member id"))
    .min(1)
    .max(20),
]);
export type EscalationTarget = z.infer<typeof escalationTargetSchema>;

/**
 * One rung of the escalation ladder (docs/state-machine.md "Escalation"): `afterMs` after the
 * request opened, unless someone has seen it or it ended, reach `to` by `via`. A push to a
 * device already pushed for the request is a repeat (the notification alerts again).
 */
export const escalationStepSchema = z
  .object({
    afterMs: z
      .number()
      .int()
      .min(0)
      .max(24 * 60 * MINUTE),
    to: escalationTargetSchema,
    via: escalationViaSchema,
  })
  .strict();
export type EscalationStep = z.infer<typeof escalationStepSchema>;

/** The most steps a ladder may have. */
export const MAX_ESCALATION_STEPS = 8;

/** Push the owner at once; again after 60 s; every approver after 3 min; mail the owner after 5 min. */
export const DEFAULT_ESCALATION: EscalationStep[] = [
  { afterMs: 0, to: "session_owner", via: "push" },
  { afterMs: MINUTE, to: "session_owner", via: "push" },
  { afterMs: 3 * MINUTE, to: "all_approvers", via: "push" },
  { afterMs: 5 * MINUTE, to: "session_owner", via: "email" },
];

export const escalationSchema = z
  .array(escalationStepSchema)
  .min(1)
  .max(MAX_ESCALATION_STEPS)
  .superRefine((steps, ctx) => {
    for (let i = 1; i < steps.length; i++) {
      if ((steps[i] as EscalationStep).afterMs < (steps[i - 1] as EscalationStep).afterMs) {
        ctx.addIssue({ code: "custom", path: [i, "afterMs"], message: "escalation steps must be sorted by afterMs" });
      }
    }
  });

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
  /**
   * `private`: agents seal each request's content to the deciders' devices, and the service
   * routes and records it without reading it (docs/threat-model.md "Private mode"). Changed
   * only by an owner with a passkey step-up; applies to new requests.
   */
  privacy: privacySchema.default("standard"),
  limits: teamLimitsSchema.prefault({}),
  /** Requests that need a fresh passkey assertion to allow, and that no standing rule allows. */
  highRisk: z.array(highRiskPatternSchema).max(100).default(DEFAULT_HIGH_RISK),
  /** How many different people must allow a high-risk request (any deny denies at once). */
  highRiskQuorum: z.union([z.literal(1), z.literal(2)]).default(1),
  /** The escalation ladder: who is reached when, until the request is seen or ends. */
  escalation: escalationSchema.default(DEFAULT_ESCALATION),
  /**
   * Rubber-stamping (the Stats screen): an allow this soon after the card was shown is a fast
   * allow; someone whose fast allows pass `rubberStampShare` of their allows is flagged. Only
   * what the screen flags: changing either gives no power away.
   */
  rubberStampMs: z.number().int().min(100).max(60_000).default(2_000),
  rubberStampShare: z.number().min(0).max(1).default(0.3),
});
export type TeamPolicy = z.infer<typeof teamPolicySchema>;

/**
 * `PUT /v1/policy`: any subset of the fields (the rest take their defaults), nothing else. The
 * one exception is `limits`: left out, the team's current limits are kept (so a change of the
 * other settings never resets them); given, its missing fields take their defaults. Only owners
 * may change `limits`; anyone who may change the policy may send them unchanged.
 */
export const policyBodySchema = teamPolicySchema.extend({ limits: teamLimitsSchema.optional() }).strict();
export type PolicyBody = z.input<typeof policyBodySchema>;
/** A validated `PUT /v1/policy` body: every field filled in but `limits`, which may be absent. */
export type PolicyUpdate = z.infer<typeof policyBodySchema>;

/**
 * What `PUT /v1/policy` takes: the policy body, and, for a change that weakens the policy
 * (docs/human-api.md "Weakening the policy"), `stepUp`: an owner's passkey assertion over the
 * challenge of `POST /v1/policy/step-up` for this same body.
 */
export const policyPutBodySchema = policyBodySchema
  .extend({ stepUp: authenticationResponseSchema.optional() })
  .strict();

/**
 * The limits a request can be refused for when it is created (`limit` of a quota refusal): the
 * team's, and the server's ceiling on the bytes one team stores per day (docs/limits.md).
 */
export const quotaLimitSchema = z.enum([
  "requestsPerKeyPerMinute",
  "pendingPerTeam",
  "pendingPerKey",
  "storedBytesPerTeamPerDay",
]);
export type QuotaLimit = z.infer<typeof quotaLimitSchema>;
