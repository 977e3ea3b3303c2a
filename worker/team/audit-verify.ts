/**
 * Verifying a team's audit log: every link of the chain in D1, and that the rows reach the heads
 * vouched for outside D1: the hub's anchor (the head it last wrote), an anchor the hub found
 * broken earlier, and, when given, a head the team exported and kept.
 *
 * Owns: gathering the heads and walking D1 page by page. Does not own: the checks themselves
 * (`audit-chain.ts`, pure), the anchors (`hub/audit-writer.ts`), the SQL (`db/audit.ts`).
 */
import type { AuditVerdict } from "../../sdk/src/human/audit";
import { type AuditHead, ChainVerifier, type StoredAuditRow } from "../audit-chain";
import { auditPage } from "../db";
import { REQUEST_BUDGET_MS, withDeadline } from "../deadline";
import { hubFor } from "../hub/api";
import type { Env } from "../types";

const VERIFY_PAGE = 500;

/** The hub's anchors (after it chained what the routes queued); past the budget, `503 service_unavailable`. */
const anchors = (env: Env, teamId: string) =>
  withDeadline(hubFor(env, teamId).auditAnchors(teamId), REQUEST_BUDGET_MS, "hub.auditAnchors");

/** The head to export: the hub's anchor, after it chained what the routes queued. */
export async function auditHead(env: Env, teamId: string): Promise<AuditHead> {
  return (await anchors(env, teamId)).anchor;
}

/** Checks the chain against its links and its heads; `exported` is a head the team kept. */
export async function verifyAudit(env: Env, teamId: string, exported?: AuditHead): Promise<AuditVerdict> {
  const { anchor, lost } = await anchors(env, teamId);
  const heads = [anchor, ...(lost ? [lost] : []), ...(exported ? [exported] : [])];
  const verifier = new ChainVerifier(heads);
  // Page by page, so a long log is never held whole; stops at the first failure.
  for (let afterSeq = 0; ; ) {
    const rows = await auditPage(env.DB, { teamId, afterSeq, limit: VERIFY_PAGE });
    if (!rows.every((row) => verifier.check(row))) break;
    if (rows.length < VERIFY_PAGE) {
      verifier.finish();
      break;
    }
    afterSeq = (rows.at(-1) as StoredAuditRow).seq;
  }
  const { entries, broken, mismatch } = verifier;
  if (broken) return { ok: false, entries, brokenAt: broken };
  if (mismatch) return { ok: false, entries, mismatch };
  return { ok: true, entries, head: anchor };
}
