-- Edit, then allow (docs/human-api.md "Edit and allow"). An approval allowed with edited input
-- keeps, beside its `request_hash` (the request as asked), the input the agent was told to run
-- (JSON) and its hash (SHA-256 hex of its canonical JSON); both null for every other approval.
ALTER TABLE approvals ADD COLUMN edited_input TEXT;
ALTER TABLE approvals ADD COLUMN edited_input_hash TEXT;
-- A decision's step-up challenge commits to the edited input its allow will carry (the v3
-- challenge): its hash here; null for an allow of the request as asked (v2).
ALTER TABLE step_up_challenges ADD COLUMN edited_input_hash TEXT;
