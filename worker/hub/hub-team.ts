/**
 * The hub's team. Every caller that may be a hub's first names the team (hubs are named by team
 * id), and the hub keeps it in `meta('team')` for the calls that do not, its alarms among them.
 *
 * Owns: `meta('team')`. Does not own: anything scoped by it (the subsystems read it through the
 * host's `teamId`).
 */
export class HubTeam {
  /** The team as stored; undefined until read. */
  private team: string | null | undefined;

  constructor(private readonly sql: SqlStorage) {}

  /** Written once per instance, not once per call: a write would make every RPC a storage commit. */
  adopt(teamId: string): void {
    if (this.id() !== null) return;
    this.sql.exec("INSERT INTO meta (k, v) VALUES ('team', ?)", teamId);
    this.team = teamId;
  }

  id(): string | null {
    this.team ??= (this.sql.exec("SELECT v FROM meta WHERE k = 'team'").toArray()[0]?.v as string | undefined) ?? null;
    return this.team;
  }
}
