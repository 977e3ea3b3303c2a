/** The team's audit log (owners and admins): newest first, and a full check of its hash chain. */
import { Hono } from "hono";
import { type AuditVerdict, auditQuerySchema } from "../../sdk/src/human/audit";
import { ChainVerifier, type StoredAuditRow } from "../audit-chain";
import { requireRole, requireWeb } from "../auth";
import { auditPage, listAudit } from "../db";
import { validate } from "../http";
import { ADMIN_ROLES } from "../roles";
import type { AppEnv } from "../types";

const VERIFY_PAGE = 500;

export const auditRoutes = new Hono<AppEnv>()
  .use("/v1/audit", requireWeb, requireRole(...ADMIN_ROLES))
  .use("/v1/audit/*", requireWeb, requireRole(...ADMIN_ROLES))
  .get("/v1/audit", validate("query", auditQuerySchema), async (c) => {
    const { cursor, limit } = c.req.valid("query");
    const rows = await listAudit(c.env.DB, { teamId: c.get("web").teamId, beforeSeq: cursor ?? null, limit });
    const last = rows.length === limit ? rows[rows.length - 1] : undefined;
    return c.json({ entries: rows.map(entryOf), cursor: last ? String(last.seq) : null });
  })
  .get("/v1/audit/verify", async (c) => {
    const teamId = c.get("web").teamId;
    const verifier = new ChainVerifier();
    // Page by page, so a long log is never held whole; stops at the first broken link.
    for (let afterSeq = 0; ; ) {
      const rows = await auditPage(c.env.DB, { teamId, afterSeq, limit: VERIFY_PAGE });
      if (!rows.every((row) => verifier.check(row)) || rows.length < VERIFY_PAGE) break;
      afterSeq = (rows.at(-1) as StoredAuditRow).seq;
    }
    const { entries, broken } = verifier;
    const verdict: AuditVerdict = broken ? { ok: false, entries, brokenAt: broken } : { ok: true, entries };
    return c.json(verdict);
  });

function entryOf(row: StoredAuditRow) {
  return { ...row, detail: parseDetail(row.detail) };
}

function parseDetail(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
