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
/** `GET /v1/audit/verify`. */
export const auditVerdictSchema = z.union([
  z.object({ ok: z.literal(true), entries: z.number() }),
  z.object({
    ok: z.literal(false),
    entries: z.number(),
    brokenAt: z.object({ seq: z.number(), eventId: z.string(), reason: z.string() }),
  }),
]);
export type AuditVerdict = z.infer<typeof auditVerdictSchema>;
