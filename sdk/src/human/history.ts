/** `/v1/history` (resolved requests, filtered, paged, exported) and `/v1/stats`. */
import { z } from "zod";
import { APPROVAL_STATES, ownedApprovalSchema, RESOLUTION_REASONS } from "../approval.js";
import { sessionIdSchema } from "../protocol.js";
import { cursorQuerySchema, pageOf } from "./common.js";

/** The history filter: every field narrows; the team comes from the session cookie. */
export const historyFilterSchema = z.object({
  state: z.enum(APPROVAL_STATES).exclude(["pending"]).optional(),
  reason: z.enum(RESOLUTION_REASONS).optional(),
  /** The session's owner or the person who decided. */
  member: z.string().min(1).max(100).optional(),
  session: sessionIdSchema.optional(),
  kind: z.string().min(1).max(64).optional(),
  from: z.coerce.number().int().min(0).optional(),
  to: z.coerce.number().int().min(0).optional(),
  /** Decided by this person (not the session's owner): the rubber-stamp flag's requests. */
  decider: z.string().min(1).max(100).optional(),
  /** Decided (by a human) under this many ms after the card was shown to the decider (`decideMsSql`). */
  decidedUnderMs: z.coerce.number().int().min(1).max(86_400_000).optional(),
});
export type HistoryFilter = z.output<typeof historyFilterSchema>;

export const historyQuerySchema = historyFilterSchema.extend({
  cursor: cursorQuerySchema.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
export const historyExportQuerySchema = historyFilterSchema.extend({
  format: z.enum(["csv", "json"]).default("csv"),
});

/** A resolved request as the history lists it. */
export const historyItemSchema = ownedApprovalSchema.extend({ latencyMs: z.number().nullable() });
export type HistoryItem = z.infer<typeof historyItemSchema>;
export const historyPageSchema = pageOf(historyItemSchema);

/** `GET /v1/stats?days=7|30`. */
export const statsQuerySchema = z.object({ days: z.enum(["7", "30"]).default("7").transform(Number) });
export const dayCountsSchema = z.object({
  date: z.string(),
  allowed: z.number(),
  denied: z.number(),
  cancelled: z.number(),
  expired: z.number(),
});

/**
 * Rubber-stamping figures of one person or the team over the period: human decisions (reason
 * `decided`), allows among them, the allow rate (`null` without decisions), the time from the
 * card shown to the decision (`decideMs`, nearest rank: the smallest value with at least
 * p % of the values at or below it; `null` without decisions), allows under the team's
 * `rubberStampMs` after it was shown, and allows of high-risk requests.
 */
export const oversightFiguresSchema = z.object({
  decisions: z.number().int(),
  allows: z.number().int(),
  allowRate: z.number().nullable(),
  decideMs: z.object({ p10: z.number().nullable(), p50: z.number().nullable(), p90: z.number().nullable() }),
  fastAllows: z.number().int(),
  highRiskAllows: z.number().int(),
});
export type OversightFigures = z.infer<typeof oversightFiguresSchema>;
export const approverFiguresSchema = oversightFiguresSchema.extend({ userId: z.string(), name: z.string() });
export type ApproverFigures = z.infer<typeof approverFiguresSchema>;
/** The team policy's rubber-stamp threshold, as the figures were counted under it. */
export const rubberStampSchema = z.object({ ms: z.number().int(), share: z.number() });
export type RubberStamp = z.infer<typeof rubberStampSchema>;

export const statsSchema = z.object({
  days: z.array(dayCountsSchema),
  latency: z.object({ p50: z.number().nullable(), p90: z.number().nullable(), count: z.number() }),
  team: oversightFiguresSchema,
  /** One row per person who decided in the period, most fast allows first; `[]` for a viewer. */
  approvers: z.array(approverFiguresSchema),
  rubberStamp: rubberStampSchema,
});
export type Stats = z.infer<typeof statsSchema>;

/** Whether someone's fast allows pass the team's share of their allows (the Stats screen's flag). */
export function rubberStamping(f: Pick<OversightFigures, "allows" | "fastAllows">, threshold: RubberStamp): boolean {
  return f.allows > 0 && f.fastAllows / f.allows > threshold.share;
}

/** The history filter of the requests behind a flag: this person's fast allows since `from`. */
export function fastAllowsFilter(userId: string, threshold: RubberStamp, from: number): HistoryFilter {
  return { state: "allowed", reason: "decided", decider: userId, decidedUnderMs: threshold.ms, from };
}
