/**
 * Migration 0019: a team whose stored policy names exactly the earlier default high-risk
 * patterns takes the new defaults (writes to keys, secrets, start-up files and CI workflows;
 * MCP tools that drop a table), with its policy version bumped; a team with its own patterns
 * keeps them. Run on real D1 with the migration's own SQL.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DEFAULT_HIGH_RISK } from "../../sdk/src/human/policy";
import { DEFAULT_POLICY } from "../../worker/policy";
import { connectAgent, createKey, pendingApprovals, permissionParams, signUp, unique } from "./helpers";

/** The defaults before migration 0019: commands only. */
const EARLIER_DEFAULTS = DEFAULT_HIGH_RISK.filter((p) => p.command !== undefined);

async function storePolicy(teamId: string, highRisk: unknown) {
  await env.DB.prepare("UPDATE teams SET policy = ? WHERE id = ?")
    .bind(JSON.stringify({ ...DEFAULT_POLICY, highRisk }), teamId)
    .run();
}

const stored = (teamId: string) =>
  env.DB.prepare("SELECT policy, policy_version FROM teams WHERE id = ?")
    .bind(teamId)
    .first<{ policy: string; policy_version: number }>();

async function runMigration0019() {
  const migration = env.TEST_MIGRATIONS.find((m) => m.name.startsWith("0019_"));
  expect(migration).toBeDefined();
  for (const query of migration?.queries ?? []) await env.DB.prepare(query).run();
}

describe("migration 0019: the new default high-risk patterns", () => {
  it("moves a team on the earlier defaults to the new ones; a team with its own patterns keeps them", async () => {
    const onDefaults = await signUp("Ada");
    const ownPatterns = await signUp("Bo");
    expect(EARLIER_DEFAULTS).toHaveLength(14);
    await storePolicy(onDefaults.teamId, EARLIER_DEFAULTS);
    await storePolicy(ownPatterns.teamId, [{ command: "make deploy-prod*" }]);
    const before = await stored(onDefaults.teamId);

    await runMigration0019();

    const after = await stored(onDefaults.teamId);
    expect(JSON.parse(after?.policy ?? "{}").highRisk).toEqual(DEFAULT_HIGH_RISK);
    expect(after?.policy_version).toBe((before?.policy_version ?? 0) + 1);
    expect(JSON.parse((await stored(ownPatterns.teamId))?.policy ?? "{}").highRisk).toEqual([
      { command: "make deploy-prod*" },
    ]);

    // The migrated policy is the one a new session's gate takes: a write to ~/.ssh opens high-risk.
    const { key } = await createKey(onDefaults);
    const sessionId = unique("sess");
    const agent = await connectAgent(key, sessionId);
    const toolCall = {
      toolCallId: "ssh-1",
      title: "Write: /home/ada/.ssh/authorized_keys",
      kind: "edit" as const,
      locations: [{ path: "/home/ada/.ssh/authorized_keys" }],
      rawInput: { file_path: "/home/ada/.ssh/authorized_keys", content: "ssh-ed25519 AAAA" },
    };
    await agent.ask(1, permissionParams(sessionId, { toolCall }));
    const [approval] = await pendingApprovals(onDefaults, sessionId);
    expect(approval?.risk).toBe("high");
  });
});
