-- A rule made from a card (docs/human-api.md "A rule from the card") binds its request's
-- arguments by their fingerprint (`match.input`); the Rules screen shows which request it came
-- from and those arguments as people read them (cut to 4 096 characters).
ALTER TABLE standing_rules ADD COLUMN from_approval TEXT;
ALTER TABLE standing_rules ADD COLUMN arguments TEXT;
