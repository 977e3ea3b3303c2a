-- The decider's words to the agent (a decision's `reason`, at most 500 characters), kept with
-- the approval for history. NULL when the decision gave none, and for every end without a human.
ALTER TABLE approvals ADD COLUMN message TEXT;
