/**
 * The team's agent sessions as the hub sees them (connected or not, pending count, metadata),
 * shown live, and the team policy's way to the sessions that are connected.
 *
 * Owns: the `sessions` table, `meta('policy')` (the hub's copy of the team's versioned policy)
 * and the fan-out of a policy change to connected sessions, in bounded batches. Does not own:
 * the policy itself (D1, `db/people.ts`), how a gate applies it (the gate keeps the newest
 * version it was given), or the directory (names come from `directory.ts`).
 */
import type { AgentSession, SessionInfo } from "../../sdk/src/approval";
import { getTeamPolicy } from "../db";
import { sessionGate } from "../gate/api";
import type { VersionedPolicy } from "../policy";
import type { SessionNews } from "./api";
import type { Directory } from "./directory";
import type { HubHost } from "./host";
import type { LiveFeed } from "./live-feed";

/** At most this many sessions are told of a policy change at once. */
export const POLICY_FANOUT_BATCH = 20;

export class Sessions {
  constructor(
    private readonly host: HubHost,
    private readonly directory: Directory,
    private readonly feed: LiveFeed,
  ) {}

  /**
   * A session connected, disconnected or changed its metadata: shown live when something
   * changed. Answers the team's policy when the hub knows a newer one than the gate's (a change
   * that raced the gate's join), so the gate takes it up.
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
    const changed =
      !before || wasConnected !== news.connected || before.info !== info || before.pending !== news.pending;
    sql.exec(
      `INSERT OR REPLACE INTO sessions (session_id, owner_user_id, info, connected, connected_at, disconnected_at,
         last_seen_at, pending) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      news.sessionId,
      news.ownerUserId,
      info,
      news.connected ? 1 : 0,
      connectedAt,
      disconnectedAt,
      news.at,
      news.pending,
    );
    if (changed) {
      await this.directory.load();
      this.feed.send({ type: "session", session: this.liveSession(news.sessionId) as AgentSession });
    }
    const policy = this.knownPolicy();
    return news.connected && policy && policy.version > news.policyVersion ? policy : null;
  }

  /** The team's policy as D1 has it now; the hub's copy takes it up when it is newer. */
  async policy(teamId: string): Promise<VersionedPolicy> {
    const current = await getTeamPolicy(this.host.env.DB, teamId);
    this.takeUp(current);
    return current;
  }

  /**
   * The policy changed in D1: take it up, and hand it to every connected session, 20 at a time.
   * A gate that misses it still gets it: from `changed`'s answer when it next reports, or at
   * its next join. A hub that never learnt its team has no sessions to tell.
   */
  async policyChanged(): Promise<void> {
    const teamId = this.host.teamId();
    if (!teamId) return;
    const update = await this.policy(teamId);
    const connected = this.host.sql
      .exec("SELECT session_id FROM sessions WHERE connected = 1")
      .toArray()
      .map((r) => r.session_id as string);
    for (let i = 0; i < connected.length; i += POLICY_FANOUT_BATCH) {
      await Promise.allSettled(
        connected
          .slice(i, i + POLICY_FANOUT_BATCH)
          .map((id) => sessionGate(this.host.env, teamId, id).applyPolicy(teamId, update)),
      );
    }
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
    };
  }
}
