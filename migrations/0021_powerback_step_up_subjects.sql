-- Step-up challenges for more than one thing (docs/human-api.md "Step-up", "Weakening the policy").
-- `purpose` says what a challenge is for: 'decision' (an allow of a high-risk request: `subject` is
-- the approval id, `subject_hash` its requestHash, `option_id` the option the allow chooses) or
-- 'policy' (a weakening `PUT /v1/policy`: `subject` is the team id, `subject_hash` the SHA-256 of
-- the new policy). A challenge of one purpose never verifies for another.
ALTER TABLE step_up_challenges RENAME COLUMN approval_id TO subject;
ALTER TABLE step_up_challenges RENAME COLUMN request_hash TO subject_hash;
ALTER TABLE step_up_challenges ADD COLUMN purpose TEXT NOT NULL DEFAULT 'decision';
ALTER TABLE step_up_challenges ADD COLUMN option_id TEXT;
-- A decision challenge issued before this migration committed to no option: it verifies for none.
DELETE FROM step_up_challenges;
