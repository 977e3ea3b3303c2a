/** `/v1/audit` (owners and admins): the hash-chained audit log, newest first, and its check. */
import { z } from "zod";

export const auditQuerySchema = z.object({
  cursor: z.coerce.number().int().positive().optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});
export const auditEntrySchema = z.object({
  seq: z.number(),
  eventId: z.string(),
  at: z.number(),
  actor: z.string(),
  action: z.string(),
  subject: z.string().nullable(),
  detail: z.unknown(),
  hash: z.string().nullable(),
  prevHash: z.string().nullable(),
});
export type AuditEntry = z.infer<typeof auditEntrySchema>;
export const auditPageSchema = z.object({ entries: z.array(auditEntrySchema), cursor: z.string().nullable() });
/**
 * `GET /v1/audit/head`: where the chain was when the hub last appended (`count` entries up to
 * and including `seq`, whose hash is `hash`; `at` is that entry's time). Kept elsewhere, it is
 * the body of `POST /v1/audit/verify`.
 */
export const auditHeadSchema = z.strictObject({
  teamId: z.string().min(1).max(128),
  count: z.number().int().min(0),
  seq: z.number().int().min(0),
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  at: z.number().int().min(0),
});
export type AuditHead = z.infer<typeof auditHeadSchema>;
/** `GET /v1/audit/verify`, `POST /v1/audit/verify`. */
export const auditVerdictSchema = z.union([
  z.object({ ok: z.literal(true), entries: z.number(), head: auditHeadSchema }),
  z.object({
    ok: z.literal(false),
    entries: z.number(),
    brokenAt: z.object({ seq: z.number(), eventId: z.string(), reason: z.string() }),
  }),
  z.object({
    ok: z.literal(false),
    entries: z.number(),
    /** The rows do not reach a head: the hub's anchor, a lost one, or the exported one given. */
    mismatch: z.object({ reason: z.string(), message: z.string(), head: auditHeadSchema }),
  }),
]);
export type AuditVerdict = z.infer<typeof auditVerdictSchema>;
