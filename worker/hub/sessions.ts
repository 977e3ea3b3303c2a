/**
 * The team's agent sessions as the hub sees them (connected or not, pending count, metadata),
 * shown live, and the team policy's way to the sessions that are live. The table stays true and
 * bounded: a "connected" row whose gate stopped reporting is marked disconnected, and rows idle
 * for a week go.
 *
 * Owns: the `sessions` table (with its stale-row correction, pruning, each session's reported
 * dead-letter count and stop), `meta('policy')` (the
 * hub's copy of the team's versioned policy) and the fan-out of a policy change to live
 * sessions (`policy_fanout`), bounded per invocation and continued from the alarm. Does not own:
 * the policy itself (D1, `db/people.ts`), how a gate applies it (the gate keeps the newest
 * version it was given), or the directory (names come from `directory.ts`).
 */

import type { AgentSession, SessionInfo } from "../../sdk/src/approval";
import { getTeamPolicy } from "../db";
import { ALARM_BUDGET_MS, FANOUT_ANSWER_MS, waitAtMost, withDeadline } from "../deadline";
import { sessionGate } from "../gate/api";
import type { VersionedPolicy } from "../policy";
import { type DeadLetteredSession, SESSION_LIVE_MS, type SessionNews } from "./api";
import type { Directory } from "./directory";
import type { HubHost } from "./host";
import type { LiveFeed } from "./live-feed";

/** At most this many gates are told of a policy change at once (bounded concurrency). */
export const POLICY_FANOUT_BATCH = 20;
/**
 * At most this many gates are told per invocation (a `PUT /v1/policy`, or one alarm), well
 * under the platform's subrequest limit (1000 on paid plans, 50 on free); the rest wait in
 * `policy_fanout` for the next alarm.
 */
export const POLICY_FANOUT_PER_RUN = 40;
/** A disconnected session idle this long leaves the hub's table (D1 keeps its index row). */
export const KEEP_SESSIONS_MS = 7 * 24 * 60 * 60 * 1000;
/** A session with dead letters stays listed longer, so the dashboard keeps showing them. */
export const KEEP_DEAD_LETTERED_MS = 30 * 24 * 60 * 60 * 1000;
/** At most this many sessions with dead letters are listed. */
const DEAD_LETTERED_LISTED = 100;
/** Stale rows corrected per tidy; the next tidy (at most a minute later, or the alarm) takes the rest. */
const STALE_PER_TIDY = 200;
/** Reports tidy the table at most this often; the alarm does it at the moment a row falls due. */
const TIDY_EVERY_MS = 60 * 1000;
/** How long a join may be handed the hub's copy of the policy without a D1 read. */
const POLICY_FRESH_MS = 5_000;

export class Sessions {
  private tidiedAt = 0;
  /** When this instance last read the policy from D1 (0: not yet). */
  private policyReadAt = 0;

  constructor(
    private readonly host: HubHost,
    private readonly directory: Directory,
    private readonly feed: LiveFeed,
  ) {}

  /**
   * A session connected, disconnected or changed its metadata: shown live when something
   * changed. Answers the team's policy when the hub knows a newer one than the gate's (a change
   * that raced the gate's join, or a fan-out that missed it), so the gate takes it up.
   */
  async changed(news: SessionNews): Promise<VersionedPolicy | null> {
    const { sql } = this.host;
    const before = sql.exec("SELECT * FROM sessions WHERE session_id = ?", news.sessionId).toArray()[0];
    const wasConnected = before?.connected === 1;
    const connectedAt = news.connected && !wasConnected ? news.at : ((before?.connected_at as number | null) ?? null);
    const disconnectedAt = news.connected
      ? null
      : wasConnected
        ? news.at
        : ((before?.disconnected_at as number) ?? news.at);
    const info = JSON.stringify(news.info);
    const dead = deadLettersAfter(before, news);
    const stopped = news.stopped ? JSON.stringify(news.stopped) : null;
    const changed =
      !before ||
      wasConnected !== news.connected ||
      before.info !== info ||
      before.pending !== news.pending ||
      before.dead_letters !== dead.count ||
      before.stopped !== stopped;
    sql.exec(
      `INSERT OR REPLACE INTO sessions (session_id, owner_user_id, info, connected, connected_at, disconnected_at,
         last_seen_at, pending, dead_letters, dead_lettered_at, stopped) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      news.sessionId,
      news.ownerUserId,
      info,
      news.connected ? 1 : 0,
      connectedAt,
      disconnectedAt,
      news.at,
      news.pending,
      dead.count,
      dead.at,
      stopped,
    );
    if (changed) {
      await this.directory.load();
      this.feed.send({ type: "session", session: this.liveSession(news.sessionId) as AgentSession });
    }
    const now = Date.now();
    if (now - this.tidiedAt >= TIDY_EVERY_MS) await this.tidy(now);
    return news.connected ? this.newerThan(news.policyVersion) : null;
  }

  /** The team's policy when the hub knows a newer one than `version` (a gate's copy), else null. */
  newerThan(version: number | undefined): VersionedPolicy | null {
    const policy = this.knownPolicy();
    return policy && version !== undefined && policy.version > version ? policy : null;
  }

  /** The team's sessions whose outbox dead-lettered rows, most recent first. */
  deadLettered(): DeadLetteredSession[] {
    return this.host.sql
      .exec(
        `SELECT session_id AS sessionId, dead_letters AS deadLetters, dead_lettered_at AS at FROM sessions
          WHERE dead_letters > 0 ORDER BY dead_lettered_at DESC, session_id LIMIT ?`,
        DEAD_LETTERED_LISTED,
      )
      .toArray() as unknown as DeadLetteredSession[];
  }

  /**
   * The team's policy for a join: the hub's copy when it read D1 within POLICY_FRESH_MS (every
   * join of a busy team would otherwise be a D1 read), else D1's now. A change made through the
   * API reaches the copy at once (`policyChanged` reads D1 before it answers the route); the
   * window only bounds how long a change whose notice to the hub was lost can go unseen.
   */
  async policy(teamId: string, now = Date.now()): Promise<VersionedPolicy> {
    const known = this.knownPolicy();
    if (known && now - this.policyReadAt < POLICY_FRESH_MS) return known;
    return this.readPolicy(teamId, now);
  }

  /** The team's policy as D1 has it now; the hub's copy takes it up when it is newer. */
  private async readPolicy(teamId: string, now: number): Promise<VersionedPolicy> {
    const current = await getTeamPolicy(this.host.env.DB, teamId);
    this.takeUp(current);
    this.policyReadAt = now;
    return current;
  }

  /**
   * The policy changed in D1: take it up, and hand it to every live session (connected, with a
   * report within SESSION_LIVE_MS), POLICY_FANOUT_PER_RUN per invocation; the rest continue
   * from the alarm. A gate that misses it still gets it: with its next request's admission
   * (`newerThan`, before the request is held), from `changed`'s answer when it next reports, or
   * at its next join. A hub that never learnt its team has no sessions to tell.
   */
  async policyChanged(now = Date.now()): Promise<void> {
    const teamId = this.host.teamId();
    if (!teamId) return;
    await this.readPolicy(teamId, now);
    await this.tidy(now);
    const { sql } = this.host;
    // A newer change replaces the one still fanning out: every live gate gets the newest.
    sql.exec("DELETE FROM policy_fanout");
    sql.exec(
      "INSERT INTO policy_fanout (session_id) SELECT session_id FROM sessions WHERE connected = 1 AND last_seen_at >= ?",
      now - SESSION_LIVE_MS,
    );
    // The route that changed it waits for this answer: gates slower than FANOUT_ANSWER_MS are told after it.
    await waitAtMost(this.fanOut(), FANOUT_ANSWER_MS, "hub.policyFanOut");
  }

  /** The alarm's share: stale rows corrected, old ones pruned, and the next part of a fan-out. */
  async alarm(now: number): Promise<void> {
    await this.tidy(now);
    await this.fanOut();
  }

  /**
   * Tells the next POLICY_FANOUT_PER_RUN waiting gates the hub's policy, POLICY_FANOUT_BATCH at a
   * time. Rows are claimed before the first call, so an alarm running alongside takes others.
   */
  private async fanOut(): Promise<void> {
    const teamId = this.host.teamId();
    const update = this.knownPolicy();
    const { sql } = this.host;
    if (!teamId || !update) return void sql.exec("DELETE FROM policy_fanout");
    const claimed = sql
      .exec(
        `DELETE FROM policy_fanout WHERE session_id IN
           (SELECT session_id FROM policy_fanout ORDER BY session_id LIMIT ?) RETURNING session_id`,
        POLICY_FANOUT_PER_RUN,
      )
      .toArray()
      .map((r) => r.session_id as string);
    for (let i = 0; i < claimed.length; i += POLICY_FANOUT_BATCH) {
      await Promise.allSettled(
        claimed
          .slice(i, i + POLICY_FANOUT_BATCH)
          .map((id) =>
            withDeadline(
              sessionGate(this.host.env, teamId, id).applyPolicy(teamId, update),
              ALARM_BUDGET_MS,
              "gate.applyPolicy",
            ),
          ),
      );
    }
    // The rest go from the alarm, in an invocation of their own (its own subrequest budget).
    if (sql.exec("SELECT 1 FROM policy_fanout LIMIT 1").toArray().length > 0) await this.host.setAlarm(Date.now());
  }

  /**
   * Keeps the table true and bounded: a "connected" row without a report for SESSION_LIVE_MS
   * (its gate died without reporting) is marked disconnected at its last report and shown live;
   * a disconnected row idle for KEEP_SESSIONS_MS is deleted. Wakes the alarm for the next row due.
   */
  private async tidy(now: number): Promise<void> {
    this.tidiedAt = now;
    const { sql } = this.host;
    const stale = sql
      .exec(
        `UPDATE sessions SET connected = 0, disconnected_at = last_seen_at WHERE session_id IN
           (SELECT session_id FROM sessions WHERE connected = 1 AND last_seen_at < ? LIMIT ?) RETURNING session_id`,
        now - SESSION_LIVE_MS,
        STALE_PER_TIDY,
      )
      .toArray()
      .map((r) => r.session_id as string);
    sql.exec(
      "DELETE FROM sessions WHERE connected = 0 AND last_seen_at < ? - CASE WHEN dead_letters > 0 THEN ? ELSE ? END",
      now,
      KEEP_DEAD_LETTERED_MS,
      KEEP_SESSIONS_MS,
    );
    if (stale.length > 0) {
      await this.directory.load();
      for (const id of stale) this.feed.send({ type: "session", session: this.liveSession(id) as AgentSession });
    }
    const next = this.nextDue(now, stale.length === STALE_PER_TIDY);
    if (next !== null) await this.host.setAlarm(next);
  }

  /** When a row next falls due: a connected row goes stale, or a disconnected one is pruned. */
  private nextDue(now: number, moreStale: boolean): number | null {
    if (moreStale) return now;
    const row = this.host.sql
      .exec(
        `SELECT MIN(last_seen_at + CASE WHEN connected = 1 THEN ? WHEN dead_letters > 0 THEN ? ELSE ? END) AS at
           FROM sessions`,
        SESSION_LIVE_MS,
        KEEP_DEAD_LETTERED_MS,
        KEEP_SESSIONS_MS,
      )
      .one();
    return (row.at as number | null) ?? null;
  }

  private takeUp(policy: VersionedPolicy): void {
    const known = this.knownPolicy();
    if (!known || known.version < policy.version) {
      this.host.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('policy', ?)", JSON.stringify(policy));
    }
  }

  private knownPolicy(): VersionedPolicy | null {
    const row = this.host.sql.exec("SELECT v FROM meta WHERE k = 'policy'").toArray()[0];
    return row ? (JSON.parse(row.v as string) as VersionedPolicy) : null;
  }

  private liveSession(sessionId: string): AgentSession | null {
    const row = this.host.sql.exec("SELECT * FROM sessions WHERE session_id = ?", sessionId).toArray()[0];
    if (!row) return null;
    const info = JSON.parse(row.info as string) as SessionInfo;
    const userId = row.owner_user_id as string;
    return {
      sessionId,
      owner: { userId, name: this.directory.nameOf(userId) },
      ...info,
      connectedAt: row.connected_at as number | null,
      disconnectedAt: row.disconnected_at as number | null,
      lastSeenAt: row.last_seen_at as number,
      pending: row.pending as number,
      ...((row.dead_letters as number) > 0 && { deadLetters: row.dead_letters as number }),
      ...(row.stopped && { stopped: JSON.parse(row.stopped as string) }),
    };
  }
}

/** A session's dead-letter count after a report (older gates send none), and when it last grew. */
function deadLettersAfter(
  before: Record<string, SqlStorageValue> | undefined,
  news: SessionNews,
): { count: number; at: number | null } {
  const had = (before?.dead_letters as number | undefined) ?? 0;
  const at = (before?.dead_lettered_at as number | null | undefined) ?? null;
  const count = news.deadLetters ?? had;
  return { count, at: count > had ? news.at : at };
}
