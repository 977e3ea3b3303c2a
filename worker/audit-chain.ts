/**
 * The audit log's hash chain (pure functions): each entry commits to its team's previous entry,
 * so editing, removing or reordering a stored row breaks every link after it.
 *
 * Owns: the event and entry shapes, the hash of one link, chaining events after a head, and
 * verifying stored rows, against the links and against anchored heads (`AuditHead`: the hub's
 * own record of where the chain was, or one a team exported and kept). Does not own: storage (`db/audit.ts`) or the order of appends (the
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
 * Where a team's chain was at one moment: `count` rows up to and including the row `seq`, whose
 * hash is `hash`; `at` is that row's time. The hub keeps one (its anchor), a team may export one.
 */
export interface AuditHead {
  teamId: string;
  count: number;
  seq: number;
  hash: string;
  at: number;
}

/** What a team's hub vouches for: the head it last wrote, and the first anchor it found broken in D1. */
export interface AuditAnchors {
  anchor: AuditHead;
  lost: AuditHead | null;
}

/** Why the stored rows do not reach a head: rows gone, a different row there, rows added before it. */
export type HeadMismatch = {
  reason: "entries_missing" | "head_mismatch" | "count_mismatch";
  head: AuditHead;
  message: string;
};

const HEAD_MESSAGES: Record<HeadMismatch["reason"], (h: AuditHead) => string> = {
  entries_missing: (h) => `the log ends before entry #${h.seq}, which the anchored head names: entries were removed`,
  head_mismatch: (h) => `entry #${h.seq} does not carry the anchored hash ${h.hash.slice(0, 12)}…`,
  count_mismatch: (h) => `the log holds a different number of entries up to #${h.seq} than the ${h.count} anchored`,
};

export function headMismatch(reason: HeadMismatch["reason"], head: AuditHead): HeadMismatch {
  return { reason, head, message: HEAD_MESSAGES[reason](head) };
}

/**
 * Walks stored rows (in seq order, page by page) and returns the first broken link. Rows from
 * before the chain existed (no hash) are accepted only before the first chained row.
 */
export class ChainVerifier {
  private expectedPrev = GENESIS_HASH;
  private chained = false;
  /** Heads not reached yet, lowest seq first. */
  private heads: AuditHead[];
  entries = 0;
  broken: BrokenLink | null = null;
  mismatch: HeadMismatch | null = null;

  /** `heads`: anchored heads the rows must reach, each with its hash and count. */
  constructor(heads: AuditHead[] = []) {
    // A head of an empty log asserts nothing.
    this.heads = heads.filter((h) => h.count > 0).sort((a, b) => a.seq - b.seq);
  }

  check(row: StoredAuditRow): boolean {
    this.entries++;
    if (!this.linkHolds(row)) return false;
    return this.reachesHeads(row);
  }

  /** After the last row: a head never reached means its row and every one after it are gone. */
  finish(): void {
    const [missed] = this.heads;
    if (missed && !this.broken && !this.mismatch) this.mismatch = headMismatch("entries_missing", missed);
  }

  private reachesHeads(row: StoredAuditRow): boolean {
    for (let head = this.heads[0]; head && head.seq <= row.seq; head = this.heads[0]) {
      if (head.seq < row.seq) this.mismatch = headMismatch("entries_missing", head);
      // A row from before the chain has no hash; the hub anchored it as the genesis hash.
      else if ((row.hash ?? GENESIS_HASH) !== head.hash) this.mismatch = headMismatch("head_mismatch", head);
      else if (this.entries !== head.count) this.mismatch = headMismatch("count_mismatch", head);
      if (this.mismatch) return false;
      this.heads.shift();
    }
    return true;
  }

  private linkHolds(row: StoredAuditRow): boolean {
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
