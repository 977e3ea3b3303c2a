/**
 * Claims: "Ada is looking". A decider who opens a pending request claims it for CLAIM_MS; the live
 * feed tells the team (`claimed`), and a browser joining later gets the claims still running. A
 * claim is not a lock: it never blocks a decision, and it ends when its time is up or the request
 * ends. Lapses are computed from `until`, so no timer runs for them.
 *
 * Owns: the `claims` table (one row per request and person). Does not own: who may claim (the
 * route checks the role and that the request is the team's and pending), the feed's sockets
 * (`live-feed.ts`), or the request's state (`live-feed.ts` keeps the hub's copy).
 */
import type { Approval, Owner } from "../../sdk/src/approval";
import { CLAIM_MS, type Claim } from "../../sdk/src/human/approvals";
import type { ClaimResult } from "./api";
import type { HubHost } from "./host";

export class Claims {
  constructor(private readonly host: HubHost) {}

  /**
   * Claims (or renews) `approval` for `by` until now + CLAIM_MS. Refused when the hub already
   * knows the request ended; if the end arrives later, it clears the claim (`end`).
   */
  claim(approval: Approval, by: Owner, now: number): ClaimResult {
    const known = this.host.sql.exec("SELECT record FROM approvals WHERE id = ?", approval.id).toArray()[0];
    const current = known ? (JSON.parse(known.record as string) as Approval) : approval;
    if (current.state !== "pending") return { ok: false, approval: current };
    const until = now + CLAIM_MS;
    this.host.sql.exec(
      `INSERT INTO claims (approval_id, user_id, name, until) VALUES (?, ?, ?, ?)
       ON CONFLICT (approval_id, user_id) DO UPDATE SET name = excluded.name, until = excluded.until`,
      approval.id,
      by.userId,
      by.name,
      until,
    );
    return { ok: true, claim: { approvalId: approval.id, by, until } };
  }

  /** The latest claim of a request still running at `now` (who is looking), or null. */
  of(approvalId: string, now: number): Claim | null {
    return this.running("approval_id = ?", now, approvalId)[0] ?? null;
  }

  /** Every claim running at `now`, for a browser that just joined the feed. */
  all(now: number): Claim[] {
    return this.running("1", now);
  }

  /** The request ended: its claims end with it (and any claim lapsed by `now` goes too). */
  end(approvalId: string, now: number): void {
    this.host.sql.exec("DELETE FROM claims WHERE approval_id = ? OR until <= ?", approvalId, now);
  }

  private running(where: string, now: number, ...bindings: SqlStorageValue[]): Claim[] {
    return this.host.sql
      .exec<{ approval_id: string; user_id: string; name: string; until: number }>(
        `SELECT approval_id, user_id, name, until FROM claims WHERE ${where} AND until > ? ORDER BY until DESC`,
        ...bindings,
        now,
      )
      .toArray()
      .map((r) => ({ approvalId: r.approval_id, by: { userId: r.user_id, name: r.name }, until: r.until }));
  }
}
