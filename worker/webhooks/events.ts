/**
 * Which audit entry is which webhook event. Every event a webhook can carry is first an entry
 * of the team's audit chain (written by the hub, its one writer), so the chain is the single
 * source: `audit.appended` is every entry, and the other events are the entries of one kind.
 *
 * Owns: the action → event map. Does not own: the event names (`sdk/src/human/webhooks.ts`) or
 * the actions (their writers: the gate's `rules.ts` `auditOp`, `escalation.ts`, `team/audit-events.ts`).
 */
import type { WebhookEvent } from "../../sdk/src/human/webhooks";

/** Audit actions that are also an event of their own (an action not here is only `audit.appended`). */
export const EVENT_OF_ACTION: Record<string, Exclude<WebhookEvent, "audit.appended">> = {
  "approval.requested": "approval.requested",
  // A request's end, whoever or whatever ended it (`approval.allow_recorded`, one allow of a quorum, is not one).
  "approval.allowed": "approval.resolved",
  "approval.denied": "approval.resolved",
  "approval.cancelled": "approval.resolved",
  "approval.expired": "approval.resolved",
  "approval.escalated": "approval.escalated",
  "rule.created": "rule.created",
  "rule.ended": "rule.ended",
  "member.joined": "member.changed",
  "member.role_changed": "member.changed",
  "member.removed": "member.changed",
};
