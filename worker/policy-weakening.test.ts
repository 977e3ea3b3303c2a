import { describe, expect, it } from "vitest";
import { teamPolicySchema } from "../sdk/src/human/policy";
import { DEFAULT_POLICY, type TeamPolicy } from "./policy";
import { policyWeakenings, STRICTEST_FIRST } from "./policy-weakening";

const policy = (p: Partial<TeamPolicy>): TeamPolicy => ({ ...DEFAULT_POLICY, ...p });
const settings = (before: Partial<TeamPolicy>, after: Partial<TeamPolicy>) =>
  policyWeakenings(policy(before), policy(after)).map((w) => w.setting);

describe("policyWeakenings", () => {
  const cases: Array<[string, Partial<TeamPolicy>, Partial<TeamPolicy>, string[]]> = [
    ["nothing changed", {}, {}, []],
    ["every pattern removed", {}, { highRisk: [] }, ["highRisk"]],
    ["one pattern removed", {}, { highRisk: DEFAULT_POLICY.highRisk.slice(1) }, ["highRisk"]],
    [
      "a pattern narrowed",
      { highRisk: [{ command: "rm -rf *" }] },
      { highRisk: [{ command: "rm -rf /tmp/*" }] },
      ["highRisk"],
    ],
    [
      "a kind added to a pattern (narrower)",
      { highRisk: [{ command: "rm -rf *" }] },
      { highRisk: [{ command: "rm -rf *", kind: "execute" }] },
      ["highRisk"],
    ],
    ["a pattern added", {}, { highRisk: [...DEFAULT_POLICY.highRisk, { title: "deploy*" }] }, []],
    ["patterns reordered", {}, { highRisk: [...DEFAULT_POLICY.highRisk].reverse() }, []],
    [
      "the same pattern in other case and spacing",
      { highRisk: [{ command: "git push --force*" }] },
      { highRisk: [{ command: "GIT  push --force*" }] },
      [],
    ],
    ["quorum lowered", { highRiskQuorum: 2 }, { highRiskQuorum: 1 }, ["highRiskQuorum"]],
    ["quorum raised", {}, { highRiskQuorum: 2 }, []],
    ["deciders widened", { deciders: "session_owner" }, { deciders: "any_approver" }, ["deciders"]],
    ["deciders narrowed", {}, { deciders: "session_owner" }, []],
    ["lock screen shows more", { lockScreen: "generic" }, { lockScreen: "tool_title" }, ["lockScreen"]],
    ["lock screen shows less", {}, { lockScreen: "generic" }, []],
    [
      "a ladder step via Slack added",
      {},
      { escalation: [...DEFAULT_POLICY.escalation, { afterMs: 60_000, to: "session_owner", via: "slack" }] },
      ["escalation"],
    ],
    [
      "a Telegram step replaced by a PagerDuty one",
      { escalation: [{ afterMs: 0, to: "session_owner", via: "telegram" }] },
      { escalation: [{ afterMs: 0, to: "session_owner", via: "pagerduty" }] },
      ["escalation"],
    ],
    [
      "a channel step moved, or one removed",
      {
        escalation: [
          { afterMs: 0, to: "session_owner", via: "slack" },
          { afterMs: 60_000, to: "all_approvers", via: "telegram" },
        ],
      },
      { escalation: [{ afterMs: 30_000, to: "all_approvers", via: "slack" }] },
      [],
    ],
    ["push and mail steps changed", {}, { escalation: [{ afterMs: 0, to: "all_approvers", via: "email" }] }, []],
    ["private mode on", {}, { privacy: "private" }, ["privacy"]],
    ["private mode off", { privacy: "private" }, { privacy: "standard" }, ["privacy"]],
    ["other settings", {}, { lifetimeMs: 60_000, onceOnlyOptions: false, notify: "all_approvers" }, []],
    [
      "several at once",
      { highRiskQuorum: 2, deciders: "session_owner", lockScreen: "generic" },
      { highRisk: [] },
      ["highRisk", "highRiskQuorum", "deciders", "lockScreen"],
    ],
  ];
  for (const [name, before, after, expected] of cases) {
    it(name, () => expect(settings(before, after)).toEqual(expected));
  }

  it("says what each weakening does", () => {
    expect(policyWeakenings(DEFAULT_POLICY, policy({ highRisk: [] }))).toEqual([
      { setting: "highRisk", says: "removes or narrows a high-risk pattern" },
    ]);
  });

  it("orders every value of each choice setting", () => {
    expect([...STRICTEST_FIRST.deciders].sort()).toEqual([...teamPolicySchema.shape.deciders.unwrap().options].sort());
    expect([...STRICTEST_FIRST.lockScreen].sort()).toEqual(
      [...teamPolicySchema.shape.lockScreen.unwrap().options].sort(),
    );
  });
});
