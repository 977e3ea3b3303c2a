/**
 * Standing rules (`/v1/rules`, docs/human-api.md "Standing rules"): a person's or the team's
 * standing "allow this kind of request" for a while, and the decision that makes one from a card.
 *
 * Owns: the bodies and answers of the rule routes and their bounds. Does not own: what a match
 * matches (`../rules.ts`, shared by the Worker's gate and the PWA's preview).
 */
import { z } from "zod";
import { ownerSchema } from "../approval.js";

const MINUTE = 60_000;
/** The longest a rule may stand. */
export const RULE_MAX_MS = 24 * 60 * MINUTE;
/** How long a rule stands when `expiresInMs` is left out. */
export const RULE_DEFAULT_MS = 60 * MINUTE;
/** The shortest a rule may stand. */
export const RULE_MIN_MS = MINUTE;
/** Active rules one team may have at once (`409 too_many_rules` past it). */
export const MAX_ACTIVE_RULES = 100;
/** `GET /v1/rules` lists rules that ended (expired or were ended) this recently, with the active ones. */
export const ENDED_RULES_SHOWN_MS = 7 * 24 * 60 * MINUTE;

/**
 * What a rule matches (`../rules.ts` `ruleMatches`): every field named must match. `title` and
 * `command` are globs, `cwd` a path prefix, the rest exact; `input` is the SHA-256 (hex) of the
 * request's arguments (`../request-match.ts` `inputFingerprint`). At least one of
 * `title`/`command`/`input`/`fingerprint`. `fingerprint` is a private request's rule fingerprint
 * (`sealed.fingerprint`, `../private/fingerprint.ts`): it stands alone, matches only private
 * requests with that fingerprint, and a match without one never matches a private request.
 */
export const ruleMatchSchema = z
  .object({
    kind: z.string().min(1).max(64).optional(),
    title: z.string().min(1).max(512).optional(),
    command: z.string().min(1).max(2048).optional(),
    cwd: z.string().min(1).max(1024).optional(),
    host: z.string().min(1).max(256).optional(),
    agent: z.string().min(1).max(128).optional(),
    sessionId: z.string().min(1).max(128).optional(),
    input: z
      .string()
      .regex(/^[0-9a-f]{64}$/, "an input fingerprint is 64 lowercase hex digits")
      .optional(),
    fingerprint: z
      .string()
      .regex(/^[0-9a-f]{64}$/, "a private request's rule fingerprint is 64 lowercase hex digits")
      .optional(),
  })
  .strict()
  .refine(
    (m) => m.title !== undefined || m.command !== undefined || m.input !== undefined || m.fingerprint !== undefined,
    { message: "a rule's match names at least one of title, command, input, fingerprint", path: ["command"] },
  )
  .refine((m) => m.fingerprint === undefined || Object.keys(m).length === 1, {
    message: "a fingerprint match names nothing else: the fingerprint covers kind, command, cwd and host",
    path: ["fingerprint"],
  });
export type RuleMatch = z.infer<typeof ruleMatchSchema>;

/** `me`: the creator's own agents' sessions; `team`: everyone's (owners and admins only). */
export const ruleScopeSchema = z.enum(["me", "team"]);
export type RuleScope = z.infer<typeof ruleScopeSchema>;

const expiresInMsSchema = z.number().int().min(RULE_MIN_MS).max(RULE_MAX_MS).default(RULE_DEFAULT_MS);

/** `POST /v1/rules`. */
export const createRuleBodySchema = z
  .object({
    match: ruleMatchSchema,
    scope: ruleScopeSchema,
    expiresInMs: expiresInMsSchema,
    note: z.string().min(1).max(280).optional(),
  })
  .strict();
export type CreateRuleBody = z.input<typeof createRuleBodySchema>;

/** A rule as the routes answer it. `allowed` counts the requests it allowed (as D1 has them). */
export const ruleSchema = z.object({
  id: z.string(),
  match: ruleMatchSchema,
  scope: ruleScopeSchema,
  note: z.string().nullable(),
  createdBy: ownerSchema,
  createdAt: z.number(),
  expiresAt: z.number(),
  /** When it was ended by `DELETE /v1/rules/:id` (null while it stands or once it merely expired). */
  endedAt: z.number().nullable(),
  endedBy: ownerSchema.nullable(),
  allowed: z.number().int().min(0),
  /** A card's rule: the request it was made from (null for one made on the Rules screen). */
  fromApproval: z.string().nullable(),
  /** A card's rule with `match.input`: that request's arguments as people read them (`argumentsText`, ≤ 4 096 characters). */
  arguments: z.string().nullable(),
});
export type Rule = z.infer<typeof ruleSchema>;

/** `POST /v1/rules` (201) and `DELETE /v1/rules/:id` (200). */
export const ruleAnswerSchema = z.object({ rule: ruleSchema });

/** `GET /v1/rules`: active rules, and those that ended in the last 7 days; newest first. */
export const ruleListSchema = z.object({ rules: z.array(ruleSchema) });
export type RuleList = z.infer<typeof ruleListSchema>;

export const ruleParamSchema = z.object({ id: z.string().regex(/^rul_[0-9A-Za-z]{22}$/, "not a rule id") });

/**
 * Which rule a card's "Allow for 1 h" makes (`../card-rules.ts`): `exact` binds every argument
 * (`derivedMatch`), `folder` this command in this folder and below, `program` this program with
 * any arguments (commands only).
 */
export const ruleChoiceSchema = z.enum(["exact", "folder", "program"]);
export type RuleChoice = z.infer<typeof ruleChoiceSchema>;

/** How far back `GET /v1/approvals/:id/rule-choices` counts the requests a choice would have allowed. */
export const RULE_CHOICE_WINDOW_MS = 7 * 24 * 60 * MINUTE;
/** The most of those requests it reads (the newest first); past it, `capped` and each count is a floor. */
export const RULE_CHOICE_SCAN_MAX = 2_000;

/**
 * `GET /v1/approvals/:id/rule-choices`: the rules a card offers for this request, narrowest
 * first, each with what it matches, a sentence for people, and how many of your requests of the
 * last 7 days (from `since`) it would have allowed; empty when no rule may be made from it.
 */
export const ruleChoicesSchema = z.object({
  choices: z.array(
    z.object({
      choice: ruleChoiceSchema,
      match: ruleMatchSchema,
      sentence: z.string(),
      wouldHaveAllowed: z.number().int().min(0),
    }),
  ),
  since: z.number(),
  capped: z.boolean(),
});
export type RuleChoices = z.infer<typeof ruleChoicesSchema>;

/**
 * `rule` of `POST /v1/approvals/:id/decision`: allow this request and make a `me` rule, the one
 * `choice` names (default `exact`; a choice not offered for this request is `409
 * rule_choice_not_offered`). `match` narrows the `exact` choice only; left out, it is derived
 * from the request (`../rules.ts` `derivedMatch`).
 */
export const decisionRuleSchema = z
  .object({
    expiresInMs: expiresInMsSchema,
    choice: ruleChoiceSchema.default("exact"),
    match: ruleMatchSchema.optional(),
  })
  .strict()
  .refine((r) => r.match === undefined || r.choice === "exact", {
    message: "a match narrows only the exact choice",
    path: ["match"],
  });
export type DecisionRule = z.input<typeof decisionRuleSchema>;
