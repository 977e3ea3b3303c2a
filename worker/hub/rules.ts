/**
 * The hub's copy of its team's standing rules: the ones that stand now, read from D1, and handed
 * to a gate with each admission (`forSession`), so matching a request touches no D1.
 *
 * How a change reaches the copy: the rule routes call `reload` and wait for it before they
 * answer, so a rule made or ended applies from the very next request. A notice can be lost, so
 * the copy also has a maximum age: read RULES_MAX_AGE_MS ago or longer (measured from when its
 * read began), it hands out nothing until a reload finishes. While it holds rules the hub's alarm
 * reads it again every RULES_REFRESH_MS (and an admission that finds it that old starts a read),
 * so a busy or idle team's rules keep applying, and an ended rule whose notice was lost allows
 * nothing 30 s after its end at the latest. Each change is also queued in D1 (`rule_changes`, in
 * the batch of the change); every reload drains the team's queue up to what it read.
 *
 * Fail-safe: a copy that is not loaded (a member's role changed, the hub's storage is new, D1
 * failed) or too old hands out no rules, so the requests meanwhile go to humans. A read that a
 * `forget` overtook is read again before it is kept (the `generation`, as `directory.ts`), so a
 * removal racing a reload never brings a removed creator's rule back.
 *
 * Owns: the `standing_rules` table and `meta('rules')` (when the copy's read began). Does not
 * own: the record and its queue (D1, `db/rules.ts`), what a rule matches (`sdk/src/rules.ts`,
 * run by the gate), or who may make one (the routes and D1's role check).
 */
import type { StandingRule } from "../../sdk/src/rules";
import { dequeueRuleChanges, standingRules } from "../db";
import type { HubHost } from "./host";

/** A copy read longer ago than this hands out no rules. */
export const RULES_MAX_AGE_MS = 30_000;
/** A copy holding rules is read again once this old (by the alarm, or an admission). */
export const RULES_REFRESH_MS = 20_000;

export class StandingRules {
  /** Reloads run one after another, so the last to finish read D1 last. */
  private reloading: Promise<void> = Promise.resolve();
  /** A background reload (`loadSoon`) is on its way: busy admissions start one, not one each. */
  private loadingSoon: Promise<void> | null = null;
  /** Bumped by every `forget`, so a read from D1 that a change overtook is not kept as current. */
  private generation = 0;

  constructor(private readonly host: HubHost) {}

  /** Reads the team's standing rules from D1 into the copy; resolves once the copy has them. */
  reload(teamId: string): Promise<void> {
    const next = this.reloading.then(() => this.readFromD1(teamId));
    this.reloading = next.catch(() => undefined);
    return next;
  }

  private async readFromD1(teamId: string): Promise<void> {
    let generation: number;
    let readAt: number;
    let read: Awaited<ReturnType<typeof standingRules>>;
    try {
      do {
        generation = this.generation;
        readAt = Date.now();
        read = await standingRules(this.host.env.DB, teamId, readAt);
      } while (generation !== this.generation);
    } catch (error) {
      // A copy that may miss an end hands out nothing until it is read again.
      this.forget();
      throw error;
    }
    this.replace(read.rules, readAt);
    if (read.rules.length > 0) await this.host.setAlarm(readAt + RULES_REFRESH_MS);
    if (read.seenChange !== null) {
      // Kept if this fails: the next reload drains it.
      await dequeueRuleChanges(this.host.env.DB, teamId, read.seenChange).catch(() => undefined);
    }
  }

  private replace(rules: StandingRule[], readAt: number): void {
    const { sql } = this.host;
    sql.exec("DELETE FROM standing_rules");
    for (const r of rules) {
      sql.exec(
        "INSERT INTO standing_rules (id, scope, created_by, creator_name, match, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
        r.id,
        r.scope,
        r.createdBy.userId,
        r.createdBy.name,
        JSON.stringify(r.match),
        r.expiresAt,
      );
    }
    sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('rules', ?)", String(readAt));
  }

  /** Starts reading the copy again unless that is already on its way; never fails. */
  loadSoon(teamId: string): Promise<void> {
    this.loadingSoon ??= this.reload(teamId)
      .catch(() => undefined)
      .finally(() => {
        this.loadingSoon = null;
      });
    return this.loadingSoon;
  }

  /** When the copy's read began; null when it is not loaded. */
  private readAt(): number | null {
    const v = this.host.sql.exec("SELECT v FROM meta WHERE k = 'rules'").toArray()[0]?.v;
    return v === undefined ? null : Number(v);
  }

  /** Whether the copy should be read again at `now`: not loaded, or older than RULES_REFRESH_MS. */
  refreshDue(now: number): boolean {
    const readAt = this.readAt();
    return readAt === null || now - readAt >= RULES_REFRESH_MS;
  }

  /** The alarm's share: a copy that holds rules and is due is read again (failures wait for the next). */
  async alarm(now: number): Promise<void> {
    const teamId = this.host.teamId();
    if (!teamId || !this.refreshDue(now) || !this.holdsRules()) return;
    await this.loadSoon(teamId);
  }

  private holdsRules(): boolean {
    return this.host.sql.exec("SELECT 1 FROM standing_rules LIMIT 1").toArray().length > 0;
  }

  /** Roles changed: no rules are handed out until the copy is read again, and a read in flight is read again. */
  forget(): void {
    this.generation++;
    this.host.sql.exec("DELETE FROM meta WHERE k = 'rules'");
  }

  /** The rules that can apply to a session of `ownerUserId` at `now`: the team's and the owner's own; none from a copy too old. */
  forSession(ownerUserId: string, now: number): StandingRule[] {
    const readAt = this.readAt();
    if (readAt === null || now - readAt >= RULES_MAX_AGE_MS) return [];
    // Read, not pruned: a write here would hold the admission's answer until the hub's commit.
    return this.host.sql
      .exec<{
        id: string;
        scope: "me" | "team";
        created_by: string;
        creator_name: string;
        match: string;
        expires_at: number;
      }>(
        `SELECT id, scope, created_by, creator_name, match, expires_at FROM standing_rules
          WHERE (scope = 'team' OR created_by = ?) AND expires_at > ? ORDER BY rowid`,
        ownerUserId,
        now,
      )
      .toArray()
      .map((r) => ({
        id: r.id,
        scope: r.scope,
        createdBy: { userId: r.created_by, name: r.creator_name },
        match: JSON.parse(r.match),
        expiresAt: r.expires_at,
      }));
  }
}
