import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  type AuditEvent,
  type AuditHead,
  auditHash,
  ChainVerifier,
  chainEvents,
  GENESIS_HASH,
  type StoredAuditRow,
} from "./audit-chain";

const event = (n: number, over: Partial<AuditEvent> = {}): AuditEvent => ({
  eventId: `evt_${n}`,
  teamId: "team_a",
  at: 1_700_000_000_000 + n,
  actor: "user:usr_1",
  action: "test.event",
  subject: "team_a",
  detail: { n, nested: { b: 2, a: 1 } },
  ...over,
});

/** As `db/audit.ts` stores an entry. */
const stored = (entries: ReturnType<typeof chainEvents>): StoredAuditRow[] =>
  entries.map((e, i) => ({
    seq: i + 1,
    eventId: e.eventId,
    teamId: e.teamId,
    at: e.at,
    actor: e.actor,
    action: e.action,
    subject: e.subject,
    detail: JSON.stringify(e.detail ?? {}),
    prevHash: e.prevHash,
    hash: e.hash,
  }));

const verify = (rows: StoredAuditRow[], heads: AuditHead[] = []) => {
  const verifier = new ChainVerifier(heads);
  if (rows.every((row) => verifier.check(row))) verifier.finish();
  return verifier;
};

describe("auditHash", () => {
  it("is SHA-256 of the canonical JSON of the link, keys sorted at every level", () => {
    const e = event(1);
    const canonical =
      '{"action":"test.event","actor":"user:usr_1","at":1700000000001,' +
      '"detail":{"n":1,"nested":{"a":1,"b":2}},"event_id":"evt_1",' +
      `"prev_hash":"${GENESIS_HASH}","subject":"team_a","team_id":"team_a"}`;
    expect(auditHash(GENESIS_HASH, e)).toBe(createHash("sha256").update(canonical).digest("hex"));
  });

  it("commits to the previous hash and to every field", () => {
    const base = auditHash(GENESIS_HASH, event(1));
    expect(auditHash("1".repeat(64), event(1))).not.toBe(base);
    for (const over of [
      { eventId: "evt_x" },
      { teamId: "team_b" },
      { at: 1 },
      { actor: "system" },
      { action: "other" },
      { subject: "other" },
      { detail: { n: 2 } },
    ]) {
      expect(auditHash(GENESIS_HASH, event(1, over))).not.toBe(base);
    }
  });

  it("hashes a missing detail as {} and a missing subject as null", () => {
    const { detail: _, ...noDetail } = event(1);
    expect(auditHash(GENESIS_HASH, noDetail)).toBe(auditHash(GENESIS_HASH, { ...noDetail, detail: {} }));
    const nullSubject = { ...event(1), subject: null as unknown as string };
    const noSubject = { ...event(1), subject: undefined as unknown as string };
    expect(auditHash(GENESIS_HASH, noSubject)).toBe(auditHash(GENESIS_HASH, nullSubject));
  });
});

describe("chainEvents", () => {
  it("links each event to the one before it, starting at the head", () => {
    const entries = chainEvents(GENESIS_HASH, [event(1), event(2), event(3)]);
    expect(entries[0]?.prevHash).toBe(GENESIS_HASH);
    for (let i = 1; i < entries.length; i++) expect(entries[i]?.prevHash).toBe(entries[i - 1]?.hash);
    for (const e of entries) expect(e.hash).toBe(auditHash(e.prevHash, e));
  });

  it("continues a chain: two appends give the same links as one", () => {
    const all = chainEvents(GENESIS_HASH, [event(1), event(2), event(3)]);
    const first = chainEvents(GENESIS_HASH, [event(1)]);
    const rest = chainEvents(first[0]?.hash as string, [event(2), event(3)]);
    expect([...first, ...rest]).toEqual(all);
  });

  it("chains nothing from nothing", () => {
    expect(chainEvents(GENESIS_HASH, [])).toEqual([]);
  });
});

describe("ChainVerifier", () => {
  const rows = () => stored(chainEvents(GENESIS_HASH, [event(1), event(2), event(3), event(4)]));

  it("accepts an unbroken chain and counts its entries", () => {
    const verifier = verify(rows());
    expect(verifier.broken).toBeNull();
    expect(verifier.entries).toBe(4);
  });

  it("finds an edited row: its own hash no longer matches", () => {
    const edited = rows();
    (edited[1] as StoredAuditRow).detail = JSON.stringify({ n: 99 });
    expect(verify(edited).broken).toEqual({ seq: 2, eventId: "evt_2", reason: "hash_mismatch" });
  });

  it("finds a removed row: the next one points at a hash that is not there", () => {
    const removed = rows().filter((r) => r.seq !== 2);
    expect(verify(removed).broken).toEqual({ seq: 3, eventId: "evt_3", reason: "prev_mismatch" });
  });

  it("finds reordered rows", () => {
    const [a, b, c, d] = rows() as [StoredAuditRow, StoredAuditRow, StoredAuditRow, StoredAuditRow];
    expect(verify([a, c, b, d]).broken).toEqual({ seq: 3, eventId: "evt_3", reason: "prev_mismatch" });
  });

  it("finds a row whose stored detail is not JSON", () => {
    const broken = rows();
    (broken[0] as StoredAuditRow).detail = "{not json";
    expect(verify(broken).broken).toEqual({ seq: 1, eventId: "evt_1", reason: "hash_mismatch" });
  });

  it("accepts rows from before the chain only before the first chained row", () => {
    const legacy: StoredAuditRow = {
      ...(rows()[0] as StoredAuditRow),
      seq: 0,
      eventId: "old",
      prevHash: null,
      hash: null,
    };
    expect(verify([legacy, ...rows()]).broken).toBeNull();
    const [a, ...rest] = rows();
    expect(verify([a as StoredAuditRow, legacy, ...rest]).broken).toEqual({
      seq: 0,
      eventId: "old",
      reason: "prev_mismatch",
    });
  });
});

describe("ChainVerifier against anchored heads", () => {
  const rows = () => stored(chainEvents(GENESIS_HASH, [event(1), event(2), event(3), event(4)]));
  const headAt = (seq: number): AuditHead => {
    const row = rows()[seq - 1] as StoredAuditRow;
    return { teamId: "team_a", count: seq, seq, hash: row.hash as string, at: row.at };
  };

  it("accepts rows that reach every head, including rows written after it", () => {
    const verifier = verify(rows(), [headAt(4), headAt(2)]);
    expect([verifier.broken, verifier.mismatch, verifier.entries]).toEqual([null, null, 4]);
  });

  it("finds the newest rows removed: the chain is whole but ends before the head", () => {
    expect(verify(rows().slice(0, 2), [headAt(4)]).mismatch).toMatchObject({
      reason: "entries_missing",
      head: headAt(4),
    });
    // Removing the anchored row itself, with what follows intact, is the link after it breaking.
    const gap = rows().filter((r) => r.seq !== 2);
    expect(verify(gap, [headAt(2)]).broken).toMatchObject({ seq: 3, reason: "prev_mismatch" });
  });

  it("finds hashes set to NULL, which would otherwise pass as rows from before the chain", () => {
    const nulled = rows().map((r) => ({ ...r, hash: null, prevHash: null }));
    expect(verify(nulled).mismatch).toBeNull();
    expect(verify(nulled, [headAt(3)]).mismatch).toMatchObject({ reason: "head_mismatch" });
  });

  it("accepts an untouched log whose newest row is from before the chain, anchored as the genesis hash", () => {
    const legacy: StoredAuditRow = {
      ...(rows()[0] as StoredAuditRow),
      seq: 1,
      eventId: "old",
      prevHash: null,
      hash: null,
    };
    const anchored = { teamId: "team_a", count: 1, seq: 1, hash: GENESIS_HASH, at: legacy.at };
    expect(verify([legacy], [anchored]).mismatch).toBeNull();
  });

  it("finds a head whose count differs and ignores the head of an empty log", () => {
    expect(verify(rows(), [{ ...headAt(3), count: 2 }]).mismatch).toMatchObject({ reason: "count_mismatch" });
    const empty = { teamId: "team_a", count: 0, seq: 0, hash: GENESIS_HASH, at: 0 };
    expect(verify([], [empty]).mismatch).toBeNull();
  });
});
