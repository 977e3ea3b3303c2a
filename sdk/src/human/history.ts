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
export const statsSchema = z.object({
  days: z.array(dayCountsSchema),
  latency: z.object({ p50: z.number().nullable(), p90: z.number().nullable(), count: z.number() }),
});
export type Stats = z.infer<typeof statsSchema>;
