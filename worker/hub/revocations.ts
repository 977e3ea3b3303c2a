/**
 * A revoked agent key reaches every session it opened, durably, from the team's hub: the
 * sessions to tell are written here before any is told (`revocation_fanout`), then told
 * REVOCATION_FANOUT_PER_RUN per invocation, REVOCATION_FANOUT_BATCH at a time (each gate denies
 * the key's pending requests `key_revoked` and closes its sockets). A gate that failed, or that
 * a hub evicted mid-call never heard back from, is told again from the hub's alarm, with
 * backoff, until it acknowledges. Until then the hub refuses the key at admission (`refuses`)
 * and vouches for no cached copy of it (`vouching.ts`, whose `revoked_keys` keeps the key while
 * its fan-out is on its way), so a gate that missed the revocation holds nothing new for it.
 *
 * The revoking route's call to the hub can fail (the hub slow or unreachable: the route answers
 * 503 or 500, D1 already refuses the key, and the gates the route told itself are all that
 * heard). So the hub also reads its team's revocations back from D1 once its last read is
 * REVOCATIONS_MAX_AGE_MS old, started by an admission or a gate's report (a connected session
 * reports at least every 10 min), and takes up each key it never heard of: refused at admission
 * and fanned out from then on. A key it heard of is not taken up again (`revocations_heard`,
 * kept while a read back could still return it).
 *
 * Owns: the `revocation_fanout` and `revocations_heard` tables, `meta('revocations_read')` (the
 * read back's cursor), the fan-out's order, bounds and retries. Does not own: the revocation
 * itself (D1, `team/keys.ts`), the revoked-key memory (`vouching.ts`), or what a gate does with
 * it (its state machine).
 */
import { keysRevokedAfter, type RevokedKeyRecord, type RevokedKeysCursor } from "../db";
import { FANOUT_ANSWER_MS, REQUEST_BUDGET_MS, waitAtMost, withDeadline } from "../deadline";
import { sessionGate } from "../gate/api";
import type { KeyRevocation } from "./api";
import type { HubHost } from "./host";
import { retryDelayMs } from "./push-queue";
import type { Vouching } from "./vouching";

/** At most this many gates are told at once (bounded concurrency). */
export const REVOCATION_FANOUT_BATCH = 20;
/**
 * At most this many gates are told per invocation (the revoking call, or one alarm), well under
 * the platform's subrequest limit; the rest wait in `revocation_fanout` for the next alarm.
 */
export const REVOCATION_FANOUT_PER_RUN = 40;
/** A gate being told counts as not told after this long (the hub was evicted mid-call): told again. */
const TELLING_MS = 60_000;
/** The hub reads its team's revocations back from D1 once its last read (or try) is this old. */
export const REVOCATIONS_MAX_AGE_MS = 30_000;
/** Each run of reads looks this far behind its start: a revocation stamped before a read may commit after it. */
const READ_OVERLAP_MS = 30_000;
/** A hub's first read looks back this far. */
const FIRST_READ_MS = 60 * 60 * 1000;
/** At most this many revoked keys per read; a full read goes on from its last key when next due. */
const READ_KEYS = 200;
/**
 * A revocation younger than this is left to the route that made it (it tells the hub within
 * REQUEST_BUDGET_MS): a read back takes it up only when it is older, at a later read.
 */
const ROUTE_GRACE_MS = 5_000;
/**
 * A key the hub took up is remembered as heard until the read back's window has left it this
 * far behind (the Worker's clock and the hub's may differ), so it is never fanned out again.
 */
const HEARD_MARGIN_MS = 5 * 60 * 1000;

/**
 * The read back's cursor: when the last read began (0: due now), where the next goes on from,
 * and, while full reads page through a burst, when the first of them began.
 */
type ReadBack = { at: number; after: RevokedKeysCursor; runFrom?: number };

type Waiting = {
  key_id: string;
  session_id: string;
  attempts: number;
};

export class Revocations {
  /** A read back from D1 on its way: busy admissions and reports start one, not one each. */
  private readingBack: Promise<void> | null = null;

  constructor(
    private readonly host: HubHost,
    private readonly vouching: Vouching,
    /** Keeps work alive past the call (`ctx.waitUntil`). */
    private readonly background: (work: Promise<unknown>) => void,
  ) {}

  /**
   * Key `keyId` was revoked in D1: remember it, write down every session it opened, and tell the
   * first of them now. How many requests those denied, and how many sessions are not told yet
   * (they are told from the alarm).
   */
  async revoked(keyId: string, sessionIds: readonly string[], now: number): Promise<KeyRevocation> {
    this.takeUp(keyId, sessionIds, now);
    const tally = { denied: 0 };
    // The revoking route waits for this answer: gates slower than FANOUT_ANSWER_MS are told after it.
    await waitAtMost(this.fanOut(now, keyId, tally), FANOUT_ANSWER_MS, "hub.revocationFanOut");
    return { deniedRequests: tally.denied, unreachedSessions: this.waiting(keyId) };
  }

  /** Remembers `keyId` revoked and writes down the sessions to tell, before any is told. */
  private takeUp(keyId: string, sessionIds: readonly string[], now: number): void {
    for (const sessionId of sessionIds) {
      this.host.sql.exec(
        "INSERT OR REPLACE INTO revocation_fanout (key_id, session_id, attempts, next_at) VALUES (?, ?, 0, ?)",
        keyId,
        sessionId,
        now,
      );
    }
    this.host.sql.exec("INSERT OR REPLACE INTO revocations_heard (key_id, heard_at) VALUES (?, ?)", keyId, now);
    this.vouching.keyRevoked(keyId, now);
  }

  /**
   * Starts reading the team's revocations back from D1 when the last read is REVOCATIONS_MAX_AGE_MS
   * old (or there was none), in the background: from each admission and each gate's report.
   */
  readBackWhenDue(teamId: string, now: number): void {
    // Never in the way of the admission or report that starts it: a failure is only logged.
    const failed = (error: unknown) => console.error(`revocations: read back failed: ${String(error).slice(0, 200)}`);
    try {
      const last = this.lastReadBack();
      if (this.readingBack || (last !== null && now - last.at < REVOCATIONS_MAX_AGE_MS)) return;
      this.readingBack = this.readBack(teamId)
        .catch(failed)
        .finally(() => {
          this.readingBack = null;
        });
      this.background(this.readingBack);
    } catch (error) {
      failed(error);
    }
  }

  /**
   * One read back: each key D1 has revoked that the hub never heard of is taken up, then its
   * gates are told. A read that fails is tried again REVOCATIONS_MAX_AGE_MS later, from where it was.
   */
  private async readBack(teamId: string): Promise<void> {
    const now = Date.now();
    const last = this.lastReadBack();
    const after = last?.after ?? { revokedAt: now - FIRST_READ_MS, keyId: "" };
    let read: RevokedKeyRecord[];
    try {
      read = await keysRevokedAfter(this.host.env.DB, teamId, after, READ_KEYS);
    } catch (error) {
      this.saveReadBack({ ...last, at: now, after });
      console.error(`revocations: D1's could not be read back, tried again later: ${String(error).slice(0, 200)}`);
      return;
    }
    const missed = read.filter((k) => k.revokedAt <= now - ROUTE_GRACE_MS && !this.heard(k.keyId));
    for (const key of missed) this.takeUp(key.keyId, key.sessions, Date.now());
    const runFrom = last?.runFrom ?? now;
    const lastKey = read.at(-1);
    const next: ReadBack =
      read.length === READ_KEYS && lastKey
        ? { at: 0, after: { revokedAt: lastKey.revokedAt, keyId: lastKey.keyId }, runFrom }
        : { at: now, after: { revokedAt: runFrom - READ_OVERLAP_MS, keyId: "" } };
    this.saveReadBack(next);
    // The earliest the run's last read will look from: a key heard well before it cannot come back.
    const earliest = Math.min(next.after.revokedAt, runFrom - READ_OVERLAP_MS);
    this.host.sql.exec("DELETE FROM revocations_heard WHERE heard_at < ?", earliest - HEARD_MARGIN_MS);
    if (missed.length > 0) await this.fanOut(Date.now());
  }

  /** Whether the hub took up `keyId` (told by the route, or read back) since the read back's window began. */
  private heard(keyId: string): boolean {
    return this.host.sql.exec("SELECT 1 FROM revocations_heard WHERE key_id = ?", keyId).toArray().length > 0;
  }

  /** The stored cursor; one that cannot be read counts as none (the next read starts afresh, and replaces it). */
  private lastReadBack(): ReadBack | null {
    const v = this.host.sql.exec("SELECT v FROM meta WHERE k = 'revocations_read'").toArray()[0]?.v;
    try {
      return typeof v === "string" ? (JSON.parse(v) as ReadBack) : null;
    } catch {
      return null;
    }
  }

  private saveReadBack(read: ReadBack): void {
    this.host.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('revocations_read', ?)", JSON.stringify(read));
  }

  /** Whether the hub refuses the key's requests: revoked lately, or its fan-out still on its way. */
  refuses(keyId: string, now: number): boolean {
    return this.vouching.revokedLately(keyId, now);
  }

  /** The alarm's share: the gates due to be told (again). */
  async alarm(now: number): Promise<void> {
    await this.fanOut(now);
  }

  /** How many sessions of `keyId` are not told yet. */
  private waiting(keyId: string): number {
    return this.host.sql.exec("SELECT COUNT(*) AS n FROM revocation_fanout WHERE key_id = ?", keyId).one().n as number;
  }

  /**
   * Tells the next REVOCATION_FANOUT_PER_RUN gates due (key `first`'s before others), counting in
   * `tally` the requests of `first` they denied as they answer. Rows are claimed before the first call (due again only
   * after TELLING_MS), so an alarm running alongside takes others; each leaves once its gate
   * acknowledged, or waits its backoff.
   */
  private async fanOut(now: number, first = "", tally = { denied: 0 }): Promise<void> {
    const teamId = this.host.teamId();
    if (!teamId) return;
    const { sql } = this.host;
    const claimed = sql
      .exec<Waiting>(
        `UPDATE revocation_fanout SET next_at = ? WHERE rowid IN
           (SELECT rowid FROM revocation_fanout WHERE next_at <= ?
             ORDER BY key_id = ? DESC, next_at, key_id, session_id LIMIT ?)
         RETURNING key_id, session_id, attempts`,
        now + TELLING_MS,
        now,
        first,
        REVOCATION_FANOUT_PER_RUN,
      )
      .toArray();
    // Should this instance die mid-call, its alarm tells the claimed gates again.
    if (claimed.length > 0) await this.host.setAlarm(now + TELLING_MS);
    for (let i = 0; i < claimed.length; i += REVOCATION_FANOUT_BATCH) {
      // Each gate's answer is taken as it comes: a route waiting on the fan-out sees the fast ones.
      await Promise.all(
        claimed.slice(i, i + REVOCATION_FANOUT_BATCH).map((row) =>
          withDeadline(
            sessionGate(this.host.env, teamId, row.session_id).revokeKey(teamId, row.key_id),
            REQUEST_BUDGET_MS,
            "gate.revokeKey",
          ).then(
            (denied) => {
              if (row.key_id === first) tally.denied += denied;
              sql.exec("DELETE FROM revocation_fanout WHERE key_id = ? AND session_id = ?", row.key_id, row.session_id);
            },
            () => {
              sql.exec(
                "UPDATE revocation_fanout SET attempts = ?, next_at = ? WHERE key_id = ? AND session_id = ?",
                row.attempts + 1,
                Date.now() + retryDelayMs(row.attempts + 1),
                row.key_id,
                row.session_id,
              );
            },
          ),
        ),
      );
    }
    this.vouching.pruneRevokedKeys(now);
    const next = sql.exec<{ at: number | null }>("SELECT MIN(next_at) AS at FROM revocation_fanout").one().at;
    if (next !== null) await this.host.setAlarm(next);
  }
}
