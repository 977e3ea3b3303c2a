-- Standing rules (docs/human-api.md "Standing rules"): a person's or the team's standing allow
-- for requests that match, until `expires_at` (at most 24 h after `created_at`) or until ended.
-- D1 is the record; the team's hub keeps the active ones, and gates match against its copy.
CREATE TABLE standing_rules (
  id          TEXT PRIMARY KEY,
  team_id     TEXT NOT NULL REFERENCES teams(id),
  created_by  TEXT NOT NULL,             -- user id
  scope       TEXT NOT NULL CHECK (scope IN ('me', 'team')),
  match       TEXT NOT NULL,             -- JSON RuleMatch
  note        TEXT,
  created_at  INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL,
  ended_at    INTEGER,
  ended_by    TEXT                       -- user id
);
CREATE INDEX standing_rules_team ON standing_rules(team_id, expires_at);

-- The rule that allowed an approval (reason 'rule'): JSON {id, createdBy} and the id, to count.
ALTER TABLE approvals ADD COLUMN rule TEXT;
ALTER TABLE approvals ADD COLUMN rule_id TEXT;
CREATE INDEX approvals_rule ON approvals(rule_id) WHERE rule_id IS NOT NULL;
