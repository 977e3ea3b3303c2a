/**
 * The hub's copy of its team's standing rules: the ones that stand now, read from D1 whenever
 * they change (the rule routes call `reload` and wait for it before they answer, so a rule
 * made or ended applies from the very next request), and handed to a gate with each admission
 * (`forSession`), so matching a request touches no D1.
 *
 * Fail-safe: a copy that is not loaded (a member's role changed, or the hub's storage is new)
 * hands out no rules until a reload finishes, so the requests meanwhile go to humans.
 *
 * Owns: the `standing_rules` table and `meta('rules')`. Does not own: the record (D1,
 * `db/rules.ts`), what a rule matches (`sdk/src/rules.ts`, run by the gate), or who may make one
 * (the routes and D1's role check).
 */
import type { StandingRule } from "../../sdk/src/rules";
import { standingRules } from "../db";
import type { HubHost } from "./host";

export class StandingRules {
  /** Reloads run one after another, so the last to finish read D1 last. */
  private reloading: Promise<void> = Promise.resolve();
  /** A background reload (`loadSoon`) is on its way: busy admissions start one, not one each. */
  private loadingSoon: Promise<void> | null = null;

  constructor(private readonly host: HubHost) {}

  /** Reads the team's standing rules from D1 into the copy; resolves once the copy has them. */
  reload(teamId: string): Promise<void> {
    const next = this.reloading.then(() => this.readFromD1(teamId));
    this.reloading = next.catch(() => undefined);
    return next;
  }

  private async readFromD1(teamId: string): Promise<void> {
    let rules: StandingRule[];
    try {
      rules = await standingRules(this.host.env.DB, teamId, Date.now());
    } catch (error) {
      // A copy that may miss an end hands out nothing until it is read again.
      this.forget();
      throw error;
    }
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
    sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('rules', '1')");
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

  /** Whether the copy is current. */
  loaded(): boolean {
    return this.host.sql.exec("SELECT 1 FROM meta WHERE k = 'rules'").toArray().length > 0;
  }

  /** Roles changed: no rules are handed out until the copy is read again. */
  forget(): void {
    this.host.sql.exec("DELETE FROM meta WHERE k = 'rules'");
  }

  /** The rules that can apply to a session of `ownerUserId` at `now`: the team's and the owner's own. */
  forSession(ownerUserId: string, now: number): StandingRule[] {
    if (!this.loaded()) return [];
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
