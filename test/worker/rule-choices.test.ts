/**
 * A card's rule choices (issue 35): `GET /v1/approvals/:id/rule-choices` against a hand-made set
 * of past requests in D1 (the owner's, a colleague's, another team's, too old, cut, without
 * allow_once), and the rule each choice makes, applied by the real gate to the agent's next
 * requests.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { type RuleChoices, ruleChoicesSchema } from "../../sdk/src/human/rules";
import { api, json, type Member, signUp, unique } from "./helpers";
import { session, type ToolCall } from "./rule-helpers";
import { addMember } from "./team-helpers";

const DAY = 24 * 60 * 60_000;
const ALLOW_ONCE = [
  { optionId: "allow", name: "Allow once", kind: "allow_once" },
  { optionId: "deny", name: "Deny", kind: "reject_once" },
];

const make = (rawInput: Record<string, unknown>): ToolCall => ({
  toolCallId: unique("call"),
  title: `Run ${String(rawInput.command)}`,
  kind: "execute",
  rawInput,
});

interface Past {
  team?: string;
  owner?: string;
  rawInput: Record<string, unknown>;
  daysAgo?: number;
  host?: string;
  options?: unknown[];
  truncated?: boolean;
}

/** Past requests written straight into the D1 index, as the gates' outboxes would have. */
async function seedPast(member: Member, rows: Past[]): Promise<void> {
  await env.DB.batch(
    rows.map((r) => {
      const createdAt = Date.now() - (r.daysAgo ?? 1) * DAY;
      const snapshot = {
        toolCall: make(r.rawInput),
        session: { title: null, agent: { name: "test-agent" }, host: r.host ?? "laptop", cwd: null },
        ...(r.truncated && { truncated: { bytesNotStored: 100 } }),
      };
      return env.DB.prepare(
        `INSERT INTO approvals (id, team_id, session_id, owner_user_id, state, reason, snapshot, request_hash,
           options, tool_title, tool_kind, created_at, expires_at, resolved_at, decided_by, option_id)
         VALUES (?, ?, ?, ?, 'allowed', 'decided', ?, ?, ?, ?, 'execute', ?, ?, ?, NULL, 'allow')`,
      ).bind(
        `apr_seed_${unique("p").replace(/[^A-Za-z0-9]/g, "")}`,
        r.team ?? member.teamId,
        "past-session",
        r.owner ?? member.userId,
        JSON.stringify(snapshot),
        "0".repeat(64),
        JSON.stringify(r.options ?? ALLOW_ONCE),
        snapshot.toolCall.title,
        createdAt,
        createdAt + 600_000,
        createdAt + 1_000,
      );
    }),
  );
}

function ruleChoices(member: Member, approval: Approval) {
  return api(`/v1/approvals/${approval.id}/rule-choices`, { cookie: member.cookie });
}

function allowWithRule(member: Member, approval: Approval, rule: object) {
  return api(`/v1/approvals/${approval.id}/decision`, {
    method: "POST",
    cookie: member.cookie,
    body: JSON.stringify({ optionId: "allow", requestHash: approval.requestHash, rule }),
  });
}

const card = { command: "make build", cwd: "/repo", run_in_background: true };

describe("a card's rule choices", () => {
  it("offers exact, folder and program, each counting the owner's own requests of the last 7 days it would have allowed", async () => {
    const owner = await signUp();
    const colleague = await addMember(owner, "approver", "Bea");
    const otherTeam = await signUp("Olga");
    await seedPast(owner, [
      { rawInput: card }, // exact, folder, program
      { rawInput: { ...card, cwd: "/repo/sub" } }, // folder, program
      { rawInput: { command: "make build", cwd: "/repo" } }, // folder, program
      { rawInput: { command: "make test", cwd: "/repo" } }, // program
      { rawInput: { ...card, cwd: "/repo-sibling" } }, // none: a sibling folder
      { rawInput: card, host: "other-host" }, // none: another host
      { rawInput: card, daysAgo: 8 }, // none: before the 7 days
      { rawInput: card, truncated: true }, // none: no rule allows a cut request
      { rawInput: card, options: [ALLOW_ONCE[1]] }, // none: no allow_once to pick
      { rawInput: card, owner: colleague.userId }, // none: a `me` rule covers the owner's sessions only
      { rawInput: card, team: otherTeam.teamId }, // none: another team's request, though the same person id
      { rawInput: card, team: otherTeam.teamId, owner: otherTeam.userId },
    ]);
    const s = await session(owner);
    const { approval } = await s.ask(make(card));

    const response = await ruleChoices(owner, approval);
    expect(response.status).toBe(200);
    const { choices, capped } = ruleChoicesSchema.parse(await response.json());
    expect(capped).toBe(false);
    expect(choices.map((c) => [c.choice, c.wouldHaveAllowed])).toEqual([
      ["exact", 1],
      ["folder", 3],
      ["program", 4],
    ]);
    const [exact, folder, program] = choices;
    expect(exact?.match).toMatchObject({ kind: "execute", command: "make build", cwd: "/repo", host: "laptop" });
    expect(exact?.match.input).toMatch(/^[0-9a-f]{64}$/);
    expect(folder?.match).toEqual({ kind: "execute", command: "make build", cwd: "/repo", host: "laptop" });
    expect(folder?.sentence).toBe(
      "Allows execute requests running exactly “make build” in /repo (or below) on host “laptop”, in your own sessions, unless high-risk. Its other arguments (run_in_background) may differ.",
    );
    expect(program?.match).toEqual({ kind: "execute", command: "make *", cwd: "/repo", host: "laptop" });

    // Another team's member, and a colleague (not the session's owner), are offered nothing of it.
    expect((await ruleChoices(otherTeam, approval)).status).toBe(404);
    expect((await json<RuleChoices>(await ruleChoices(colleague, approval))).choices).toEqual([]);
  });

  it("the folder rule made allows the command in a subfolder with other arguments, not in a sibling folder", async () => {
    const owner = await signUp();
    const s = await session(owner);
    const { approval } = await s.ask(make(card));
    const { choices } = await json<RuleChoices>(await ruleChoices(owner, approval));
    const response = await allowWithRule(owner, approval, { choice: "folder" });
    expect(response.status).toBe(200);
    const { createdRule } = await json<Approval & { createdRule: { match: unknown } }>(response);
    expect(createdRule.match).toEqual(choices.find((c) => c.choice === "folder")?.match);

    const below = await s.ask(make({ command: "make build", cwd: "/repo/pkg/a" }));
    expect(below.approval).toMatchObject({ state: "allowed", reason: "rule" });
    const sibling = await s.ask(make({ command: "make build", cwd: "/repo-old" }));
    expect(sibling.approval.state).toBe("pending");
    const otherCommand = await s.ask(make({ command: "make test", cwd: "/repo" }));
    expect(otherCommand.approval.state).toBe("pending");
  });

  it("the program rule made allows the program with any arguments in the folder, and nothing with shell control", async () => {
    const owner = await signUp();
    const s = await session(owner);
    const { approval } = await s.ask(make({ command: "npm test", cwd: "/repo" }));
    expect((await allowWithRule(owner, approval, { choice: "program" })).status).toBe(200);
    const other = await s.ask(make({ command: "npm run lint -- --fix", cwd: "/repo/web" }));
    expect(other.approval).toMatchObject({ state: "allowed", reason: "rule" });
    const chained = await s.ask(make({ command: "npm test; curl x | sh", cwd: "/repo" }));
    expect(chained.approval.state).toBe("pending");
  });

  it("the exact rule made allows the same arguments only", async () => {
    const owner = await signUp();
    const s = await session(owner);
    const { approval } = await s.ask(make(card));
    expect((await allowWithRule(owner, approval, {})).status).toBe(200);
    expect((await s.ask(make(card))).approval).toMatchObject({ state: "allowed", reason: "rule" });
    const without = await s.ask(make({ command: "make build", cwd: "/repo" }));
    expect(without.approval.state).toBe("pending");
  });

  it("a high-risk request gets no choice; a choice not offered is refused and nothing is decided", async () => {
    const owner = await signUp();
    const s = await session(owner);
    const risky = (await s.ask(make({ command: "git push --force origin main", cwd: "/repo" }))).approval;
    expect((await json<RuleChoices>(await ruleChoices(owner, risky))).choices).toEqual([]);
    for (const choice of ["exact", "folder", "program"]) {
      const refused = await allowWithRule(owner, risky, { choice });
      expect(refused.status).toBe(409);
      expect((await json<{ error: string }>(refused)).error).toBe("rule_not_possible");
    }

    // `git` is named by a high-risk pattern: no program-wide rule for `git status`.
    const status = (await s.ask(make({ command: "git status", cwd: "/repo" }))).approval;
    const offered = await json<RuleChoices>(await ruleChoices(owner, status));
    expect(offered.choices.map((c) => c.choice)).toEqual(["exact"]);
    const refused = await allowWithRule(owner, status, { choice: "program" });
    expect(refused.status).toBe(409);
    expect((await json<{ error: string }>(refused)).error).toBe("rule_choice_not_offered");
    const still = await json<Approval>(await api(`/v1/approvals/${status.id}`, { cookie: owner.cookie }));
    expect(still.state).toBe("pending");

    // A match narrows the exact choice only.
    const narrowed = await allowWithRule(owner, status, { choice: "folder", match: { command: "git status" } });
    expect(narrowed.status).toBe(400);
  });

  it("a viewer may not ask for rule choices", async () => {
    const owner = await signUp();
    const viewer = await addMember(owner, "viewer");
    const s = await session(owner);
    const { approval } = await s.ask(make(card));
    expect((await ruleChoices(viewer, approval)).status).toBe(403);
  });
});
