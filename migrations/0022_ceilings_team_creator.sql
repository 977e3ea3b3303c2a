-- Who made each team, so the operator's ceiling on teams a person may create (MAX_TEAMS_PER_PERSON,
-- worker/ceilings.ts) can count them; teams made before this are credited to their first owner.
ALTER TABLE teams ADD COLUMN created_by TEXT;
UPDATE teams SET created_by = (
  SELECT m.user_id FROM memberships m WHERE m.team_id = teams.id AND m.role = 'owner' ORDER BY m.created_at LIMIT 1
);
CREATE INDEX teams_created_by ON teams(created_by);
