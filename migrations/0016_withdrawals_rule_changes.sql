-- Rule changes on their way to the team's hub (worker/hub/rules.ts): one row per rule made or
-- ended, written in the same D1 batch as the change, so a change whose notice to the hub was
-- lost is still known. The hub removes a team's rows once its copy of the rules was read after
-- them (every reload drains them: the rule routes' notice, the hub's 20 s refresh, a stale copy).
CREATE TABLE rule_changes (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  team_id     TEXT NOT NULL,
  rule_id     TEXT NOT NULL,
  changed_at  INTEGER NOT NULL
);
CREATE INDEX rule_changes_team ON rule_changes(team_id, seq);
