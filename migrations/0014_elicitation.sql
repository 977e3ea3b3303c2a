-- Elicitations (ACP elicitation/create) share the approvals index with permission requests:
-- what was asked, and an elicitation's answer once a human gave one (its content is never stored here).
ALTER TABLE approvals ADD COLUMN request_type TEXT NOT NULL DEFAULT 'permission';
ALTER TABLE approvals ADD COLUMN action TEXT;
