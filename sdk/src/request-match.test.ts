import { describe, expect, it } from "vitest";
import { globLiteral, globMatch, isHighRisk, pathWithin, requestFacts } from "./request-match.js";

describe("globMatch", () => {
  it("matches stars, question marks and literals over the whole text", () => {
    expect(globMatch("git push --force*", "git push --force origin main")).toBe(true);
    expect(globMatch("git push --force*", "echo git push --force")).toBe(false);
    expect(globMatch("*DROP TABLE*", "psql -c 'DROP TABLE users'")).toBe(true);
    expect(globMatch("ls ?", "ls a")).toBe(true);
    expect(globMatch("ls ?", "ls ab")).toBe(false);
    expect(globMatch("a*b*c", "aXXbYYc")).toBe(true);
    expect(globMatch("a*b*c", "aXXbYY")).toBe(false);
    expect(globMatch("*", "")).toBe(true);
    expect(globMatch("", "x")).toBe(false);
  });

  it("normalizes whitespace and can ignore case", () => {
    expect(globMatch("rm -rf *", "  rm   -rf\t/tmp/x ")).toBe(true);
    expect(globMatch("*drop table*", "DROP TABLE x", { ignoreCase: true })).toBe(true);
    expect(globMatch("*drop table*", "DROP TABLE x")).toBe(false);
  });

  it("keeps escaped characters literal", () => {
    expect(globMatch("echo \\*", "echo *")).toBe(true);
    expect(globMatch("echo \\*", "echo hello")).toBe(false);
    expect(globMatch(globLiteral("rm ./*.tmp"), "rm ./*.tmp")).toBe(true);
    expect(globMatch(globLiteral("rm ./*.tmp"), "rm ./a.tmp")).toBe(false);
    expect(globMatch(globLiteral("a?b\\c"), "a?b\\c")).toBe(true);
  });

  it("stays fast on a pathological pattern", () => {
    const text = "a".repeat(20_000);
    expect(globMatch(`${"*a".repeat(50)}b`, text)).toBe(false);
  });
});

describe("pathWithin", () => {
  it("is a path prefix, not a string prefix", () => {
    expect(pathWithin("/work/app/src", "/work/app")).toBe(true);
    expect(pathWithin("/work/app", "/work/app/")).toBe(true);
    expect(pathWithin("/work/application", "/work/app")).toBe(false);
    expect(pathWithin("/anything", "/")).toBe(true);
  });
});

describe("requestFacts", () => {
  it("reads the command from rawInput, as a string or an argv", () => {
    const session = { title: null, agent: { name: "claude-code" }, host: "laptop", cwd: "/work" };
    const facts = requestFacts({
      toolCall: { toolCallId: "t", kind: "execute", title: "Bash", rawInput: { command: ["git", "push"] } },
      session,
    });
    expect(facts).toEqual({
      kind: "execute",
      title: "Bash",
      command: "git push",
      cwd: "/work",
      host: "laptop",
      agent: "claude-code",
    });
    expect(requestFacts({ toolCall: { toolCallId: "t", rawInput: "ls" }, session }).command).toBeNull();
  });
});

describe("isHighRisk", () => {
  const session = { title: null, agent: null, host: null, cwd: null };
  const facts = (command: string, kind = "execute") =>
    requestFacts({ toolCall: { toolCallId: "t", kind, title: "Bash", rawInput: { command } }, session });
  const patterns = [{ command: "git push --force*" }, { command: "rm -rf *" }, { command: "*drop table*" }];

  it("matches the whole command or any part of a chain, ignoring case", () => {
    expect(isHighRisk(patterns, facts("git push --force origin main"))).toBe(true);
    expect(isHighRisk(patterns, facts("cd /tmp && rm -rf build"))).toBe(true);
    expect(isHighRisk(patterns, facts("psql -c 'DROP TABLE users'"))).toBe(true);
    expect(isHighRisk(patterns, facts("git push origin main"))).toBe(false);
    expect(isHighRisk(patterns, facts("ls -la | grep rm"))).toBe(false);
  });

  it("needs every field a pattern names", () => {
    expect(isHighRisk([{ kind: "delete", title: "Bash" }], facts("ls", "delete"))).toBe(true);
    expect(isHighRisk([{ kind: "delete", title: "Bash" }], facts("ls", "execute"))).toBe(false);
    expect(isHighRisk([{ command: "*" }], requestFacts({ toolCall: { toolCallId: "t" }, session }))).toBe(false);
  });
});
