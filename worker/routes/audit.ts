/**
 * The team's audit log (owners and admins): newest first, a full check of its hash chain
 * against the hub's anchor (and, by POST, against a head the team kept), and the head to keep.
 */
import { Hono } from "hono";
import { auditHeadSchema, auditQuerySchema } from "../../sdk/src/human/audit";
import type { StoredAuditRow } from "../audit-chain";
import { requireRole, requireSameOrigin, requireWeb } from "../auth";
import { listAudit } from "../db";
import { DomainError } from "../errors";
import { validate } from "../http";
import { ADMIN_ROLES } from "../roles";
import { auditHead, verifyAudit } from "../team/audit-verify";
import type { AppEnv } from "../types";

export const auditRoutes = new Hono<AppEnv>()
  .use("/v1/audit", requireWeb, requireRole(...ADMIN_ROLES))
  .use("/v1/audit/*", requireWeb, requireRole(...ADMIN_ROLES))
  .get("/v1/audit", validate("query", auditQuerySchema), async (c) => {
    const { cursor, limit } = c.req.valid("query");
    const rows = await listAudit(c.env.DB, { teamId: c.get("web").teamId, beforeSeq: cursor ?? null, limit });
    const last = rows.length === limit ? rows[rows.length - 1] : undefined;
    return c.json({ entries: rows.map(entryOf), cursor: last ? String(last.seq) : null });
  })
  .get("/v1/audit/head", async (c) => c.json(await auditHead(c.env, c.get("web").teamId)))
  .get("/v1/audit/verify", async (c) => c.json(await verifyAudit(c.env, c.get("web").teamId)))
  .post("/v1/audit/verify", requireSameOrigin, validate("json", auditHeadSchema), async (c) => {
    const teamId = c.get("web").teamId;
    const head = c.req.valid("json");
    if (head.teamId !== teamId) throw new DomainError("invalid_request", "this head is another team's");
    return c.json(await verifyAudit(c.env, teamId, head));
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
