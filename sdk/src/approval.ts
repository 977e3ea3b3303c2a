/**
 * The approval as the human API returns it (docs/state-machine.md, docs/human-api.md "Approval"),
 * as zod schemas with their types inferred. The Worker answers with these shapes, the PWA parses
 * answers with them, the SDK reads them. Environment-neutral: no Node and no Workers APIs here.
 */
import { z } from "zod";
import { elicitationActionSchema, elicitationSchemaSchema } from "./elicitation-protocol.js";
import { CHANNELS, escalationViaSchema } from "./human/channels.js";
import { agentPromptSchema } from "./permission-prompt.js";
import { riskSchema, sealedRequestSchema } from "./private/sealed.js";
import { sessionParentSchema } from "./protocol.js";

export const APPROVAL_STATES = ["pending", "allowed", "denied", "cancelled", "expired"] as const;
export const approvalStateSchema = z.enum(APPROVAL_STATES);
export type ApprovalState = z.infer<typeof approvalStateSchema>;

export const RESOLUTION_REASONS = [
  "decided",
  "agent_cancelled",
  "session_cancelled",
  "agent_disconnected",
  "expired",
  "key_revoked",
  "service_restart",
  "invalid",
  /** Allowed by a standing rule, with no human (the approval's `rule` names it). */
  "rule",
  /** Denied because someone stopped its session (`decidedBy` names who, `message` carries their reason). */
  "session_stopped",
  /** Cancelled: a decider dismissed the card (`decidedBy` names who); the agent is answered `cancelled`, never an allow. */
  "dismissed",
] as const;
export const resolutionReasonSchema = z.enum(RESOLUTION_REASONS);
export type ResolutionReason = z.infer<typeof resolutionReasonSchema>;

/** A person named in an answer: who owns a session (and so its requests), a key, an invite. */
export const ownerSchema = z.object({ userId: z.string(), name: z.string() });
export type Owner = z.infer<typeof ownerSchema>;

export const decidedBySchema = z.object({
  userId: z.string(),
  name: z.string(),
  /** The device or surface the decision came from, e.g. "web" or a device name. */
  device: z.string(),
  /**
   * When the decider first saw the card (a device of theirs displayed or opened its push, or a
   * visible page of theirs showed it), as the gate knew at the decision; absent when it knew of none.
   */
  shownAt: z.number().optional(),
  /**
   * Where the decision was taken: a channel's card ("Allowed by Ada on Slack"); absent for the
   * app (`"app"`, as every decision before channels).
   */
  via: z.enum(["app", ...CHANNELS]).optional(),
});
export type DecidedBy = z.infer<typeof decidedBySchema>;

/** The standing rule that allowed an approval (reason `rule`): which one, and who made it. */
export const approvalRuleSchema = z.object({ id: z.string(), createdBy: ownerSchema });
export type ApprovalRule = z.infer<typeof approvalRuleSchema>;

/** Per-device push delivery of an approval, as `GET /v1/approvals/:id` and the live feed report it. */
export const deliverySchema = z.object({
  deviceId: z.string(),
  deviceName: z.string(),
  userId: z.string(),
  sentAt: z.number().nullable(),
  deliveredAt: z.number().nullable(),
  seenAt: z.number().nullable(),
  failedAt: z.number().nullable(),
  /** The service worker's receipts: it got the push, `showNotification` resolved, the person tapped it. */
  receivedAt: z.number().nullable().optional(),
  displayedAt: z.number().nullable().optional(),
  openedAt: z.number().nullable().optional(),
});
export type Delivery = z.infer<typeof deliverySchema>;

/**
 * One step of a request's escalation ladder as it ran (the card's timeline): when, by which
 * channel, whom it was for and how many it reached. `shownLive`: people whose open, visible app
 * got the card instead of a push; `phase: "presence"` is the push that follows when they had not
 * seen it within 20 s.
 */
export const escalationEventSchema = z.object({
  step: z.number().int(),
  phase: z.enum(["step", "presence"]),
  at: z.number(),
  via: escalationViaSchema,
  to: z.array(z.string()),
  reached: z.number().int(),
  shownLive: z.array(z.string()),
});
export type EscalationEvent = z.infer<typeof escalationEventSchema>;

/** What the agent said about its session (hello and `session/update`). */
export const sessionInfoSchema = z.object({
  title: z.string().nullable(),
  agent: z.object({ name: z.string(), version: z.string().optional() }).nullable(),
  host: z.string().nullable(),
  cwd: z.string().nullable(),
  /** Set when the session is a subagent's: its parent session (absent on every other session). */
  parent: sessionParentSchema.optional(),
});
export type SessionInfo = z.infer<typeof sessionInfoSchema>;

export const approvalSnapshotSchema = z.object({
  /** The agent's ACP tool call, as it sent it: unknown fields pass through. */
  toolCall: z.looseObject({ toolCallId: z.string() }),
  session: sessionInfoSchema,
  /** The request's `_meta`, when the agent sent one: the agent's own words, unverified (not policy). */
  meta: z.record(z.string(), z.unknown()).optional(),
  /** An ACP v2 request's `title`, `description` and `subject` as sent (the card's `toolCall` is derived from them). */
  permission: z.looseObject({ title: z.string() }).optional(),
  /**
   * Present when the request was larger than the team's `limits.storedBytesPerRequest`: what is
   * stored is cut to the cap, and cards say "truncated: N bytes not stored". The approval's
   * `requestHash` still covers the whole request the agent sent.
   */
  truncated: z.object({ bytesNotStored: z.number().int().positive() }).optional(),
  /** An elicitation's question (approvals of `type: "elicitation"`), stored whole: never cut. */
  elicitation: z
    .object({
      mode: z.enum(["form", "url"]),
      message: z.string(),
      requestedSchema: elicitationSchemaSchema.optional(),
      url: z.string().optional(),
      elicitationId: z.string().optional(),
    })
    .optional(),
});
export type ApprovalSnapshot = z.infer<typeof approvalSnapshotSchema>;

/**
 * An option as offered to humans; `permission`: the adapter's words for it (`_meta.permission`,
 * permission-prompt.ts), the agent's own, shown as such.
 */
export const offeredOptionSchema = z.object({
  optionId: z.string(),
  name: z.string(),
  kind: z.string(),
  permission: agentPromptSchema.optional(),
});
export type OfferedOption = z.infer<typeof offeredOptionSchema>;

export { RISK_TIERS, type Risk, riskSchema } from "./private/sealed.js";

/**
 * A high-risk request under `highRiskQuorum: 2`: who allowed it so far (each with their own
 * passkey step-up). It stays pending until `required` different people allowed it.
 */
export const quorumSchema = z.object({
  required: z.number().int().min(2),
  allowedBy: z.array(decidedBySchema.extend({ at: z.number() })),
});
export type Quorum = z.infer<typeof quorumSchema>;

/** The approval itself, as the SessionGate holds it and D1 records it. */
export const approvalSchema = z.object({
  id: z.string(),
  sessionId: z.string(),
  state: approvalStateSchema,
  reason: resolutionReasonSchema.nullable(),
  snapshot: approvalSnapshotSchema,
  options: z.array(offeredOptionSchema),
  requestHash: z.string(),
  createdAt: z.number(),
  expiresAt: z.number(),
  resolvedAt: z.number().nullable(),
  optionId: z.string().nullable(),
  decidedBy: decidedBySchema.nullable(),
  /** What was asked: a permission (absent, as in every record from before elicitation) or an elicitation. */
  type: z.enum(["permission", "elicitation"]).optional(),
  /** An elicitation's answer once a human gave one; the content it carried goes to the agent only. */
  action: elicitationActionSchema.nullable().optional(),
  /** Present when a standing rule allowed it (reason `rule`; `decidedBy` is then null). */
  rule: approvalRuleSchema.optional(),
  /** The decider's words to the agent (the decision's `reason`, ≤ 500 characters); absent when none. Text, never markup. */
  message: z.string().optional(),
  /** `high`: the team's `highRisk` patterns matched when it opened; allowing needs a passkey step-up. Absent on records from before tiers (normal). */
  risk: riskSchema.optional(),
  /** Present on a high-risk request that needs more than one person to allow it. */
  quorum: quorumSchema.optional(),
  /**
   * Allowed with edited input: the input the agent was told to run instead of the request's
   * `toolCall.rawInput`, and its hash (SHA-256 hex of its canonical JSON). `requestHash` stays the original's.
   */
  editedInput: z.record(z.string(), z.unknown()).optional(),
  editedInputHash: z.string().optional(),
  /**
   * A private request (docs/threat-model.md "Private mode"): its content, sealed to the team's
   * devices. `snapshot` then holds only what routing needs and `options` generic names; a
   * device opens this and checks it against `requestHash` before showing anything.
   */
  sealed: sealedRequestSchema.optional(),
});
export type Approval = z.infer<typeof approvalSchema>;

/** An approval with whose session asked: every list of approvals and the live feed carry `owner`. */
export const ownedApprovalSchema = approvalSchema.extend({ owner: ownerSchema });
export type OwnedApproval = z.infer<typeof ownedApprovalSchema>;

/** One approval in full (`GET /v1/approvals/:id`, the live feed): its owner and its push deliveries. */
export const approvalDetailSchema = ownedApprovalSchema.extend({
  delivery: z.array(deliverySchema),
  /** The escalation steps that ran, oldest first (absent once the hub forgot the request). */
  escalations: z.array(escalationEventSchema).optional(),
  /** Set when the team's hub (or the request's gate: the record is then D1's) did not answer in time: `delivery` is then empty and `escalations` absent, not known to be so. */
  detailUnavailable: z.literal(true).optional(),
});
export type ApprovalDetail = z.infer<typeof approvalDetailSchema>;

/**
 * A stopped session (`POST /v1/sessions/:id/stop`): who stopped it, when, and their reason to the
 * agent. While stopped, every new request of the session is refused; `resume` ends it.
 */
export const sessionStopSchema = z.object({
  by: ownerSchema,
  at: z.number(),
  /** The stopper's words (≤ 500 characters); null when they gave none. Text, never markup. */
  reason: z.string().nullable(),
});
export type SessionStop = z.infer<typeof sessionStopSchema>;

/** The sentence an agent or a person reads for a stop: "stopped by Ada: <reason>". */
export function stoppedSentence(stop: { by: { name: string }; reason?: string | null }): string {
  return stop.reason ? `stopped by ${stop.by.name}: ${stop.reason}` : `stopped by ${stop.by.name}`;
}

/** An agent session as the dashboard shows it (`GET /v1/sessions` and the live feed). */
export const agentSessionSchema = z.object({
  sessionId: z.string(),
  owner: ownerSchema,
  title: z.string().nullable(),
  agent: sessionInfoSchema.shape.agent,
  host: z.string().nullable(),
  cwd: z.string().nullable(),
  /** Set when the session is a subagent's (see `sessionInfoSchema`). */
  parent: sessionParentSchema.optional(),
  connectedAt: z.number().nullable(),
  disconnectedAt: z.number().nullable(),
  lastSeenAt: z.number(),
  pending: z.number(),
  /** Outbox rows of this session that could not be written to D1 or the audit chain (dead letters); absent when none. */
  deadLetters: z.number().int().positive().optional(),
  /** Present while the session is stopped: its new requests are refused until someone resumes it. */
  stopped: sessionStopSchema.optional(),
});
export type AgentSession = z.infer<typeof agentSessionSchema>;
