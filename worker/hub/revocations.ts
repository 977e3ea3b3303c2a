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
 * REVOCATIONS_MAX_AGE_MS old, started by an admission (as the rules' refresh), and takes up
 * each key it was not told of: refused at admission and fanned out from then on. A key whose
 * revocation the hub missed is refused within 30 s of its next admission, plus D1's read.
 *
 * Owns: the `revocation_fanout` table, `meta('revocations_read')` (the read-back's cursor), the
 * fan-out's order, bounds and retries. Does not own:
 * the revocation itself (D1, `team/keys.ts`), the revoked-key memory (`vouching.ts`), or what a
 * gate does with it (its state machine).
 */
import { keysRevokedAfter, type RevokedKeyRecord, type RevokedKeysCursor } from "../db";
import { FANOUT_ANSWER_MS, orFallback, REQUEST_BUDGET_MS, withDeadline } from "../deadline";
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
/** Each read looks this far behind the one before: a revocation stamped before a read may commit after it. */
const READ_OVERLAP_MS = 30_000;
/** A hub's first read looks back this far. */
const FIRST_READ_MS = 60 * 60 * 1000;
/** At most this many revoked keys per read; a full read goes on from its last key at the next admission. */
const READ_KEYS = 200;

/** When the last read back began (0: due now), and where the next goes on from. */
type ReadBack = { at: number; after: RevokedKeysCursor };

type Waiting = {
  key_id: string;
  session_id: string;
  attempts: number;
};

export class Revocations {
  /** A read back from D1 on its way: busy admissions start one, not one each. */
  private readingBack: Promise<void> | null = null;

  constructor(
    private readonly host: HubHost,
    private readonly vouching: Vouching,
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
    await orFallback(this.fanOut(now, keyId, tally), FANOUT_ANSWER_MS, "hub.revocationFanOut", undefined);
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
    this.vouching.keyRevoked(keyId, now);
  }

  /** Whether the team's revocations are due to be read back from D1 (never read, or REVOCATIONS_MAX_AGE_MS ago). */
  readBackDue(now: number): boolean {
    const last = this.lastReadBack();
    return last === null || now - last.at >= REVOCATIONS_MAX_AGE_MS;
  }

  /**
   * Reads the team's revocations back from D1 and takes up each key the hub was not told of,
   * then tells its gates. One read at a time; one that fails is tried again REVOCATIONS_MAX_AGE_MS later.
   */
  readBackSoon(teamId: string): Promise<void> {
    this.readingBack ??= this.readBack(teamId).finally(() => {
      this.readingBack = null;
    });
    return this.readingBack;
  }

  private async readBack(teamId: string): Promise<void> {
    const now = Date.now();
    const after = this.lastReadBack()?.after ?? { revokedAt: now - FIRST_READ_MS, keyId: "" };
    let read: RevokedKeyRecord[];
    try {
      read = await keysRevokedAfter(this.host.env.DB, teamId, after, READ_KEYS);
    } catch (error) {
      this.saveReadBack({ at: now, after });
      console.error(`revocations: D1's could not be read back, tried again later: ${String(error).slice(0, 200)}`);
      return;
    }
    const missed = read.filter((k) => !this.refuses(k.keyId, Date.now()));
    for (const key of missed) this.takeUp(key.keyId, key.sessions, Date.now());
    const last = read.at(-1);
    this.saveReadBack(
      read.length === READ_KEYS && last
        ? { at: 0, after: { revokedAt: last.revokedAt, keyId: last.keyId } }
        : { at: now, after: { revokedAt: now - READ_OVERLAP_MS, keyId: "" } },
    );
    if (missed.length > 0) await this.fanOut(Date.now());
  }

  private lastReadBack(): ReadBack | null {
    const v = this.host.sql.exec("SELECT v FROM meta WHERE k = 'revocations_read'").toArray()[0]?.v;
    return typeof v === "string" ? (JSON.parse(v) as ReadBack) : null;
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
                Date.now() + retryDelayMs(row.attempts),
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
