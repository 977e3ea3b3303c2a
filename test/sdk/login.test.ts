/** `tapgate login` / `status` / `logout`: the built CLI as a child process, against wrangler dev. */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { freePort, ROOT, startLocalWorker } from "../../scripts/local-worker.mjs";
import { Tapgate, TapgateError } from "../../sdk/src/index";
import { Person, unique } from "./helpers";

let worker: Awaited<ReturnType<typeof startLocalWorker>>;
let person: Person;

beforeAll(async () => {
  worker = await startLocalWorker();
  person = await Person.signUp(worker.url, "Ada");
});
afterAll(() => worker?.stop());

interface CliRun {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number>;
}

/** Runs `tapgate …` with its config in `home`, and none of the test runner's TAPGATE_* variables. */
function cli(home: string, ...args: string[]): CliRun {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("TAPGATE_")));
  const child = spawn(process.execPath, [join(ROOT, "sdk/dist/cli/main.js"), ...args], {
    cwd: ROOT,
    env: { ...env, XDG_CONFIG_HOME: home },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => {
    stdout += d;
  });
  child.stderr.on("data", (d) => {
    stderr += d;
  });
  const exited = once(child, "exit").then(([code]) => code as number);
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** The code the CLI shows a person, read from its stderr (the verification URL carries it). */
function shownCode(run: CliRun): Promise<string> {
  return vi.waitFor(
    () => {
      const match = run.stderr().match(/\/device\?code=([A-Z]{4}-[A-Z]{4})/);
      if (!match?.[1]) throw new Error(`no code shown yet: ${run.stderr()}`);
      return match[1];
    },
    { timeout: 15_000, interval: 50 },
  );
}

const newHome = () => mkdtempSync(join(tmpdir(), "tapgate-login-"));
const configFile = (home: string) => join(home, "tapgate", "config.json");
const quiet = () => undefined;

async function opensSession(apiKey: string): Promise<unknown> {
  const gate = new Tapgate({ url: worker.url, apiKey, onLog: quiet, maxReconnectAttempts: 0 });
  try {
    (await gate.session(unique("login"))).close();
    return "opened";
  } catch (error) {
    return error;
  } finally {
    gate.close();
  }
}

describe("tapgate login, status, logout", () => {
  it("signs in by device code, reports status, logs out (revoking the key), then is signed out", async () => {
    const home = newHome();
    const login = cli(home, "login", "--url", worker.url);
    const code = await shownCode(login);
    expect(login.stderr()).toContain(`check that it shows the code  ${code}`);
    expect(login.stdout()).toBe(""); // the prompt and the QR code stay off stdout
    expect((await person.fetch(`/v1/device/${code}/approve`, { method: "POST" })).status).toBe(200);

    expect(await login.exited).toBe(0);
    expect(statSync(configFile(home)).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, "tapgate")).mode & 0o777).toBe(0o700);
    const config = JSON.parse(readFileSync(configFile(home), "utf8"));
    expect(config).toMatchObject({
      url: worker.url,
      apiKey: expect.stringMatching(/^tg_/),
      keyId: expect.stringMatching(/^key_/),
      team: { name: "Ada's team" },
      user: { id: person.userId, name: "Ada" },
    });
    expect(login.stdout()).toBe(
      `Signed in to Ada's team as ${config.user.email}. Key ${config.keyPrefix}… stored in ${configFile(home)}\n`,
    );
    expect(await opensSession(config.apiKey)).toBe("opened");

    const status = cli(home, "status");
    expect(await status.exited).toBe(0);
    expect(status.stdout()).toContain(worker.url);
    expect(status.stdout()).toContain("Ada's team");
    expect(status.stdout()).toContain(config.user.email);
    expect(status.stdout()).toContain(`${config.keyPrefix}…`);
    expect(status.stdout()).toContain("reachable, key valid");

    const logout = cli(home, "logout");
    expect(await logout.exited).toBe(0);
    expect(logout.stdout()).toContain(`Revoked key ${config.keyPrefix}…`);
    expect(existsSync(configFile(home))).toBe(false);
    const refused = await opensSession(config.apiKey);
    expect(refused).toBeInstanceOf(TapgateError);
    expect((refused as TapgateError).status).toBe(401);

    const after = cli(home, "status");
    expect(await after.exited).toBe(1);
    expect(after.stderr()).toContain("not signed in: run `tapgate login`");
  }, 60_000);

  it("a denied code: login exits 1, says so, and stores nothing", async () => {
    const home = newHome();
    const login = cli(home, "login", "--url", worker.url);
    const code = await shownCode(login);
    expect((await person.fetch(`/v1/device/${code}/deny`, { method: "POST" })).status).toBe(200);
    expect(await login.exited).toBe(1);
    expect(login.stderr()).toContain("denied");
    expect(existsSync(configFile(home))).toBe(false);
  }, 30_000);

  it("Ctrl-C while waiting: login exits non-zero, says so, and stores nothing", async () => {
    const home = newHome();
    const login = cli(home, "login", "--url", worker.url);
    await shownCode(login);
    login.child.kill("SIGINT");
    expect(await login.exited).toBe(130);
    expect(login.stderr()).toContain("login cancelled: nothing was stored");
    expect(existsSync(configFile(home))).toBe(false);
  }, 30_000);

  it("an unreachable server: login and status exit 1 and name it; logout still forgets the key", async () => {
    const down = `http://127.0.0.1:${await freePort()}`;
    const home = newHome();
    const login = cli(home, "login", "--url", down);
    expect(await login.exited).toBe(1);
    expect(login.stderr()).toContain(`cannot reach ${down}`);

    // A key stored for a server that is gone (say, the laptop is offline).
    const signedIn = newHome();
    const first = cli(signedIn, "login", "--url", worker.url);
    await person.fetch(`/v1/device/${await shownCode(first)}/approve`, { method: "POST" });
    expect(await first.exited).toBe(0);
    const config = JSON.parse(readFileSync(configFile(signedIn), "utf8"));
    writeFileSync(configFile(signedIn), JSON.stringify({ ...config, url: down }));

    const status = cli(signedIn, "status");
    expect(await status.exited).toBe(1);
    expect(status.stderr()).toContain(`cannot reach ${down}`);
    expect(status.stdout()).toContain("Ada's team");

    const logout = cli(signedIn, "logout");
    expect(await logout.exited).toBe(0);
    expect(logout.stderr()).toContain(`Could not revoke key ${config.keyPrefix}…`);
    expect(existsSync(configFile(signedIn))).toBe(false);
    expect(await opensSession(config.apiKey)).toBe("opened"); // not revoked: the output said so
  }, 60_000);

  it("a revoked key: status exits 1 and says to log in again", async () => {
    const home = newHome();
    const login = cli(home, "login", "--url", worker.url);
    await person.fetch(`/v1/device/${await shownCode(login)}/approve`, { method: "POST" });
    expect(await login.exited).toBe(0);
    const config = JSON.parse(readFileSync(configFile(home), "utf8"));
    expect((await person.fetch(`/v1/keys/${config.keyId}`, { method: "DELETE" })).status).toBe(200);
    const status = cli(home, "status");
    expect(await status.exited).toBe(1);
    expect(status.stderr()).toContain("key rejected (401): run `tapgate login` again");
  }, 30_000);

  it("an existing config directory and file readable by others are tightened to 0700 and 0600", async () => {
    const home = newHome();
    mkdirSync(join(home, "tapgate"), { mode: 0o755 });
    chmodSync(join(home, "tapgate"), 0o755);
    writeFileSync(configFile(home), "{}", { mode: 0o644 });
    chmodSync(configFile(home), 0o644);
    const login = cli(home, "login", "--url", worker.url);
    await person.fetch(`/v1/device/${await shownCode(login)}/approve`, { method: "POST" });
    expect(await login.exited).toBe(0);
    expect(statSync(join(home, "tapgate")).mode & 0o777).toBe(0o700);
    expect(statSync(configFile(home)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(configFile(home), "utf8"))).toMatchObject({ url: worker.url });
  }, 30_000);

  it("plain http:// to another machine is refused before anything is sent; logout still forgets the key", async () => {
    // TEST-NET-1: nothing answers there, so a refusal that came from trying would take the 10 s timeout.
    const remote = "http://192.0.2.1:8787";
    const home = newHome();
    const login = cli(home, "login", "--url", remote);
    expect(await login.exited).toBe(2);
    expect(login.stderr()).toContain("refusing plain http:// to 192.0.2.1:8787");
    expect(login.stderr()).toContain("use https://192.0.2.1:8787");
    expect(existsSync(configFile(home))).toBe(false);

    // A config stored (by an older CLI, or by hand) for a plain-http remote server.
    const signedIn = newHome();
    const first = cli(signedIn, "login", "--url", worker.url);
    await person.fetch(`/v1/device/${await shownCode(first)}/approve`, { method: "POST" });
    expect(await first.exited).toBe(0);
    const config = JSON.parse(readFileSync(configFile(signedIn), "utf8"));
    writeFileSync(configFile(signedIn), JSON.stringify({ ...config, url: remote }));
    const status = cli(signedIn, "status");
    expect(await status.exited).toBe(1);
    expect(status.stderr()).toContain("refusing plain http:// to 192.0.2.1:8787");
    // The agent never starts: it would run with a gate that sends the key in the clear.
    const marker = join(signedIn, "agent-started");
    const run = cli(
      signedIn,
      "run",
      "--prompt",
      "hi",
      "--",
      process.execPath,
      "-e",
      `require("fs").writeFileSync(${JSON.stringify(marker)}, "")`,
    );
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain("refusing plain http:// to 192.0.2.1:8787");
    expect(existsSync(marker)).toBe(false);
    const logout = cli(signedIn, "logout");
    expect(await logout.exited).toBe(0);
    expect(logout.stderr()).toContain("refusing plain http://");
    expect(existsSync(configFile(signedIn))).toBe(false);
  }, 30_000);
});
