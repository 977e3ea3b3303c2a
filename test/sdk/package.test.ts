/**
 * The published `tapgate` package: what `npm pack` ships, and that the tarball works once installed.
 * Packs a copy of sdk/ so that cleaning and rebuilding dist/ never races the other test files,
 * which run sdk/dist concurrently.
 */
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../../scripts/local-worker.mjs";

const exec = promisify(execFile);
const SDK = join(ROOT, "sdk");
const { version } = JSON.parse(readFileSync(join(SDK, "package.json"), "utf8")) as { version: string };
const ALLOWED = /^(dist\/.+\.js|dist\/.+\.d\.ts|README\.md|LICENSE|package\.json)$/;

let staged: string;

beforeAll(() => {
  staged = mkdtempSync(join(tmpdir(), "tapgate-pack-"));
  cpSync(SDK, staged, {
    recursive: true,
    filter: (src) => !/^(node_modules|dist)(\/|$)/.test(relative(SDK, src)),
  });
  // The repo's toolchain (tsc, types, dependencies) for the build that `npm pack` runs.
  symlinkSync(join(ROOT, "node_modules"), join(staged, "node_modules"), "dir");
  // Leftovers of an old build that must not ship.
  mkdirSync(join(staged, "dist", "gone"), { recursive: true });
  writeFileSync(join(staged, "dist", "gone", "removed.js"), "export {};\n");
  writeFileSync(join(staged, "dist", "index.js.map"), "{}\n");
  writeFileSync(join(staged, "dist", "tsconfig.build.tsbuildinfo"), "{}\n");
});

async function npm(args: string[], cwd: string) {
  return exec("npm", args, { cwd, env: { ...process.env, npm_config_update_notifier: "false" }, maxBuffer: 1 << 24 });
}

interface PackEntry {
  filename: string;
  files: Array<{ path: string }>;
}

describe("the tapgate package", () => {
  it("npm pack ships only the built JS, type declarations, README, LICENSE and package.json", async () => {
    const { stdout } = await npm(["pack", "--dry-run", "--json"], staged);
    const [entry] = JSON.parse(stdout) as PackEntry[];
    const paths = entry?.files.map((f) => f.path) ?? [];
    expect(paths.filter((p) => !ALLOWED.test(p))).toEqual([]);
    expect(paths).toEqual(
      expect.arrayContaining([
        "package.json",
        "README.md",
        "LICENSE",
        "dist/index.js",
        "dist/index.d.ts",
        "dist/cli/main.js",
        "dist/cli/claude-hook.js",
      ]),
    );
    expect(paths).not.toContain("dist/gone/removed.js");
  }, 120_000);

  it("the packed tarball installs into a fresh project, and its tapgate command works", async () => {
    const out = mkdtempSync(join(tmpdir(), "tapgate-tarball-"));
    const { stdout } = await npm(["pack", "--json", "--pack-destination", out], staged);
    const tarball = join(out, (JSON.parse(stdout) as PackEntry[])[0]?.filename ?? "");

    const project = mkdtempSync(join(tmpdir(), "tapgate-consumer-"));
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
    await npm(["install", tarball, "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], project);

    const home = mkdtempSync(join(tmpdir(), "tapgate-empty-home-"));
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: home };
    const bin = join(project, "node_modules", ".bin", "tapgate");
    const tapgate = (args: string[], input?: string) => {
      const child = exec(bin, args, { cwd: project, env });
      if (input !== undefined) child.child.stdin?.end(input);
      return child;
    };

    expect((await tapgate(["--version"])).stdout.trim()).toBe(version);
    const help = (await tapgate(["--help"])).stdout;
    for (const command of ["login", "logout", "status", "acp", "run", "claude-hook"]) expect(help).toContain(command);

    const hookInput = {
      session_id: "0b0c7a1e-3f4d-4a59-9b1a-2f3c4d5e6f70",
      cwd: project,
      hook_event_name: "PreToolUse",
      tool_name: "Bash",
      tool_input: { command: "rm -rf /" },
      tool_use_id: "toolu_01",
    };
    const hook = await tapgate(["claude-hook"], JSON.stringify(hookInput));
    expect(JSON.parse(hook.stdout)).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: "Tapgate: not signed in — run `tapgate login`",
      },
    });

    const { stdout: imported } = await exec(
      process.execPath,
      ["--input-type=module", "-e", "const m = await import('tapgate'); console.log(typeof m.Tapgate)"],
      { cwd: project, env },
    );
    expect(imported.trim()).toBe("function");
  }, 180_000);
});
