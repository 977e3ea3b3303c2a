/** `/v1/approvals`: the team's requests (list, read, decide) and the service worker's "seen". */
import { z } from "zod";
import { approvalDetailSchema, approvalSchema, ownedApprovalSchema, ownerSchema } from "../approval.js";
import { elicitationActionSchema } from "../elicitation-protocol.js";
import { errorBodySchema } from "../errors.js";
import { authenticationResponseSchema } from "./auth.js";
import { cursorQuerySchema, pageOf } from "./common.js";
import { decisionRuleSchema, ruleSchema } from "./rules.js";

/** An edited tool input: a JSON object (its shape is checked against the request's by the gate). */
export const toolInputSchema = z.record(z.string(), z.unknown());

export const deviceIdSchema = z.string().regex(/^dev_[0-9A-Za-z]{22}$/, "not a device id");

/** `GET /v1/approvals?state&scope&cursor&limit`. */
export const approvalListQuerySchema = z.object({
  state: z.enum(["pending", "resolved"]).default("pending"),
  scope: z.enum(["mine", "team"]).default("team"),
  cursor: cursorQuerySchema.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
export type ApprovalListQuery = z.input<typeof approvalListQuerySchema>;

/** Its answer: newest first, each with its owner. */
export const approvalPageSchema = pageOf(ownedApprovalSchema);
export type ApprovalPage = z.infer<typeof approvalPageSchema>;

/** `GET /v1/approvals/:id`. */
export const approvalAnswerSchema = approvalDetailSchema;

/** The longest `reason` a decision may carry (UTF-16 code units, as JavaScript counts). */
export const DECISION_REASON_CHARS = 500;

/** `POST /v1/approvals/:id/decision` (header `X-Tapgate-Device`: the percent-encoded device name). */
export const decisionBodySchema = z.object({
  optionId: z.string().min(1).max(128),
  requestHash: z
    .string()
    .regex(/^[0-9a-f]{64}$/, "requestHash must be the 64-character hex SHA-256 shown with the approval"),
  /** Also make a standing `me` rule from this request (an `allow_once` option only; docs/human-api.md). */
  rule: decisionRuleSchema.optional(),
  /** The decider's words to the agent (with any option): stored as the approval's `message`, shown as text. */
  reason: z.string().min(1).max(DECISION_REASON_CHARS).optional(),
  /** A passkey assertion over `POST /v1/approvals/:id/step-up`'s options: needed to allow a high-risk request. */
  stepUp: authenticationResponseSchema.optional(),
  /**
   * Allow with this tool input instead of the request's (an allow option of a request whose agent
   * `acceptsEdits`; never with `rule`): the whole input, of the original's shape (`edit-input.ts`).
   */
  updatedInput: toolInputSchema.optional(),
  /** Not with an option: a dismissal is its own body (`dismissBodySchema`), so one with both is refused, never read as the option. */
  dismiss: z.never().optional(),
});
export type DecisionBody = z.infer<typeof decisionBodySchema>;

/**
 * An elicitation's answer (`type: "elicitation"` approvals): `accept` (with a form's `content`,
 * which the gate checks against the request's schema: `400 invalid_content` names the field),
 * `decline` or `cancel`. Values are checked there, against the form, not here.
 */
export const elicitationDecisionBodySchema = z.object({
  action: elicitationActionSchema,
  content: z.record(z.string().max(128), z.unknown()).optional(),
  requestHash: decisionBodySchema.shape.requestHash,
  dismiss: z.never().optional(),
});
export type ElicitationDecisionBody = z.infer<typeof elicitationDecisionBodySchema>;

/**
 * A decider dismisses a permission request's card: it ends `cancelled` (reason `dismissed`) and
 * the agent is answered ACP's `{outcome: {outcome: "cancelled"}}`, which it treats as not allowed.
 * No option, rule, edit or step-up goes with it; `reason` is the decider's words to the agent.
 */
export const dismissBodySchema = z.strictObject({
  dismiss: z.literal(true),
  requestHash: decisionBodySchema.shape.requestHash,
  reason: decisionBodySchema.shape.reason,
});
export type DismissBody = z.infer<typeof dismissBodySchema>;

/** What `POST /v1/approvals/:id/decision` takes: a permission's option, an elicitation's answer, or a dismissal. */
export const anyDecisionBodySchema = z.union([decisionBodySchema, elicitationDecisionBodySchema, dismissBodySchema]);
export type AnyDecisionBody = z.infer<typeof anyDecisionBodySchema>;

/** Its answer: the approval as decided (and `createdRule`, the rule a `rule` made). Refusals (409/410) carry it too, as `approval`. */
export const decisionAnswerSchema = approvalSchema.extend({ createdRule: ruleSchema.optional() });

/** `POST /v1/approvals/:id/seen` (the service worker; answers 204). */
export const seenBodySchema = z.object({ deviceId: deviceIdSchema });
export type SeenBody = z.infer<typeof seenBodySchema>;

/**
 * `POST /v1/approvals/:id/receipt` (the service worker; answers 204): `received` (the push
 * arrived), `displayed` (`showNotification` resolved), `opened` (the person tapped it).
 */
export const receiptBodySchema = z.object({
  deviceId: deviceIdSchema,
  event: z.enum(["received", "displayed", "opened"]),
});
export type ReceiptBody = z.infer<typeof receiptBodySchema>;
/** The most decisions one batch may carry. */
export const DECISION_BATCH_MAX = 50;

/**
 * `POST /v1/approvals/decisions`: several decisions at once, each exactly a single decision's
 * body plus the approval it decides. A repeated `approvalId` is decided once: later items answer
 * as a repeated single decision would.
 */
export const decisionBatchBodySchema = z.object({
  decisions: z
    .array(decisionBodySchema.extend({ approvalId: z.string().min(1).max(200) }))
    .min(1)
    .max(DECISION_BATCH_MAX),
});
export type DecisionBatchBody = z.infer<typeof decisionBatchBodySchema>;
export type DecisionBatchItem = DecisionBatchBody["decisions"][number];

/**
 * One item's result, in the order sent: `status` is what a single decision would have answered,
 * `error` its error code (absent on 200), `approval` where a single decision's answer carries it.
 */
export const decisionBatchResultSchema = z.object({
  approvalId: z.string(),
  status: z.number().int(),
  error: errorBodySchema.shape.error.optional(),
  message: z.string().optional(),
  approval: approvalSchema.optional(),
});
export type DecisionBatchResult = z.infer<typeof decisionBatchResultSchema>;
export const decisionBatchAnswerSchema = z.object({ results: z.array(decisionBatchResultSchema) });
export type DecisionBatchAnswer = z.infer<typeof decisionBatchAnswerSchema>;

/** How long a claim ("Ada is looking") shows unless renewed; a decision ends it sooner. */
export const CLAIM_MS = 2 * 60_000;

/** `POST /v1/approvals/:id/claim` (body `{}`) answers it; the live feed's `claimed` event carries it. Not a lock. */
export const claimSchema = z.object({ approvalId: z.string(), by: ownerSchema, until: z.number() });
export type Claim = z.infer<typeof claimSchema>;
