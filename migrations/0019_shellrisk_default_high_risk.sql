-- Issue 31: the default high-risk patterns now also cover tools without a command (writes to
-- keys, secrets, shell start-up files and CI workflows; MCP tools that drop or empty a table).
-- A team whose stored policy names exactly the earlier defaults (the dashboard saves the whole
-- policy, defaults included) takes the new ones; a team that chose its own patterns keeps them.
-- The version is bumped so every SessionGate takes the new copy. Strengthening only: nothing is
-- removed from any team's patterns.
UPDATE teams
SET policy = json_set(policy, '$.highRisk', json('[{"command":"git push --force*"},{"command":"git push -f*"},{"command":"git push * --force*"},{"command":"git push * -f*"},{"command":"git reset --hard*"},{"command":"rm -rf *"},{"command":"rm -fr *"},{"command":"rm -r -f *"},{"command":"sudo rm *"},{"command":"*DROP TABLE*"},{"command":"*DROP DATABASE*"},{"command":"*TRUNCATE TABLE*"},{"command":"terraform destroy*"},{"command":"kubectl delete*"},{"writes":".ssh"},{"writes":".ssh/*"},{"writes":".env*"},{"writes":"*.pem"},{"writes":".github/workflows/*"},{"writes":".bashrc"},{"writes":".bash_profile"},{"writes":".bash_login"},{"writes":".profile"},{"writes":".zshrc"},{"writes":".zshenv"},{"writes":".zprofile"},{"writes":".zlogin"},{"writes":".config/fish/config.fish"},{"title":"mcp_*","input":"*DROP TABLE*"},{"title":"mcp_*","input":"*DROP DATABASE*"},{"title":"mcp_*","input":"*TRUNCATE *"}]')),
    policy_version = policy_version + 1
WHERE json_valid(policy)
  AND json_extract(policy, '$.highRisk') = '[{"command":"git push --force*"},{"command":"git push -f*"},{"command":"git push * --force*"},{"command":"git push * -f*"},{"command":"git reset --hard*"},{"command":"rm -rf *"},{"command":"rm -fr *"},{"command":"rm -r -f *"},{"command":"sudo rm *"},{"command":"*DROP TABLE*"},{"command":"*DROP DATABASE*"},{"command":"*TRUNCATE TABLE*"},{"command":"terraform destroy*"},{"command":"kubectl delete*"}]';
