/**
 * The audit log's hash chain (pure functions): each entry commits to its team's previous entry,
 * so editing, removing or reordering a stored row breaks every link after it.
 *
 * Owns: the event and entry shapes, the hash of one link, chaining events after a head, and
 * verifying stored rows. Does not own: storage (`db/audit.ts`) or the order of appends (the
 * hub's `audit-writer.ts`, the chain's one writer). No Durable Object or D1 import: it runs
 * under plain Node (`audit-chain.test.ts`).
 */
import { parseJson } from "../sdk/src/protocol";
import { canonicalJson, sha256Hex } from "./crypto";

export const GENESIS_HASH = "0".repeat(64);

export interface AuditEvent {
  eventId: string;
  teamId: string;
  at: number;
  actor: string;
  action: string;
  subject: string;
  detail?: unknown;
}

/** An event with its place in the chain, as stored. */
export interface AuditEntry extends AuditEvent {
  prevHash: string;
  hash: string;
}

/** What a stored row holds (detail as stored JSON text), for verification. */
export interface StoredAuditRow {
  seq: number;
  eventId: string;
  teamId: string;
  at: number;
  actor: string;
  action: string;
  subject: string | null;
  detail: string;
  prevHash: string | null;
  hash: string | null;
}

export function auditHash(prevHash: string, e: AuditEvent): string {
  return sha256Hex(
    canonicalJson({
      prev_hash: prevHash,
      event_id: e.eventId,
      team_id: e.teamId,
      at: e.at,
      actor: e.actor,
      action: e.action,
      subject: e.subject ?? null,
      detail: e.detail ?? {},
    }),
  );
}

/** Links events after `head`, in order. */
export function chainEvents(head: string, events: AuditEvent[]): AuditEntry[] {
  let prevHash = head;
  return events.map((e) => {
    const hash = auditHash(prevHash, e);
    const entry = { ...e, prevHash, hash };
    prevHash = hash;
    return entry;
  });
}

export type BrokenLink = { seq: number; eventId: string; reason: "hash_mismatch" | "prev_mismatch" };

/**
 * Walks stored rows (in seq order, page by page) and returns the first broken link. Rows from
 * before the chain existed (no hash) are accepted only before the first chained row.
 */
export class ChainVerifier {
  private expectedPrev = GENESIS_HASH;
  private chained = false;
  entries = 0;
  broken: BrokenLink | null = null;

  check(row: StoredAuditRow): boolean {
    this.entries++;
    if (row.hash === null && !this.chained) return true;
    this.chained = true;
    const link = { seq: row.seq, eventId: row.eventId };
    if (row.prevHash !== this.expectedPrev) {
      this.broken = { ...link, reason: "prev_mismatch" };
      return false;
    }
    const detail = parseJson(row.detail);
    // A null subject hashes as null, exactly as it was written.
    const recomputed =
      detail === undefined ? null : auditHash(row.prevHash, { ...row, subject: row.subject as string, detail });
    if (recomputed === null || recomputed !== row.hash) {
      this.broken = { ...link, reason: "hash_mismatch" };
      return false;
    }
    this.expectedPrev = row.hash;
    return true;
  }
}
