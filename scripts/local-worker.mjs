/**
 * Starts the Tapgate Worker on wrangler's local runtime (workerd, local D1 and Durable Objects;
 * `dev-server.mjs`), for the SDK and browser tests and the benchmark.
 */
import { spawn } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { localVars } from "./local-vars.mjs";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
const WRANGLER = join(ROOT, "node_modules", ".bin", "wrangler");
const DEV_SERVER = join(ROOT, "scripts", "dev-server.mjs");
const QUIET_ENV = { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" };

/** A free loopback port. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function run(args, stdio) {
  return new Promise((resolve, reject) => {
    const child = spawn(WRANGLER, args, { cwd: ROOT, env: QUIET_ENV, stdio });
    let output = "";
    child.stdout?.on("data", (d) => (output += d));
    child.stderr?.on("data", (d) => (output += d));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`wrangler ${args[0]} failed (${code}):\n${output}`)),
    );
  });
}

/**
 * Runs one SQL command on the local D1 database kept in `persistTo`, beside a Worker serving it
 * (a test's fault, such as a trigger that refuses a row, as production's D1 would refuse it).
 */
export function executeD1(persistTo, sql) {
  return run(["d1", "execute", "tapgate", "--local", "--persist-to", persistTo, "--command", sql], "pipe");
}

/** Applies `migrations/` to the local D1 database kept in `persistTo`. */
export function applyMigrations(persistTo, stdio = "pipe") {
  const persist = persistTo ? ["--persist-to", persistTo] : [];
  return run(["d1", "migrations", "apply", "tapgate", "--local", ...persist], stdio);
}

/**
 * @param {{ persistTo?: string, port?: number, vars?: Record<string, string> | ((port: number) => Record<string, string>), assets?: string, minify?: boolean, inspect?: boolean, log?: (line: string) => void }} [options]
 *   `assets` serves that directory instead of `pwa/dist` (the rest of wrangler.toml's `[assets]` still applies).
 *   `vars` may be a function of the port, for values that name the Worker's own origin.
 *   `minify: false` serves the Worker unminified (readable names in a CPU profile).
 *   `inspect: true` attaches wrangler's DevTools inspector (off otherwise: it costs the runtime, see dev-server.mjs).
 * @returns {Promise<{ url: string, persistTo: string, pid: number, inspector?: string, stop: (signal?: NodeJS.Signals) => Promise<void> }>}
 *   `pid` is the dev server's process, the parent of the workerd processes that serve the Worker;
 *   `inspector` (with `inspect`) is the DevTools protocol endpoint of the Worker's isolate (its Durable Objects run in it too).
 */
export async function startLocalWorker(options = {}) {
  const persistTo = options.persistTo ?? (await mkdtemp(join(tmpdir(), "tapgate-")));
  await applyMigrations(persistTo);
  // A port found free can be taken by another process before wrangler binds it (test files
  // start Workers in parallel): with ports of our choosing, try again on fresh ones.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(persistTo, options);
    } catch (error) {
      const taken = String(error.message).includes("Address already in use");
      if (!taken || options.port !== undefined || attempt === 3) throw error;
    }
  }
}

async function startOnce(persistTo, options) {
  const port = options.port ?? (await freePort());
  const inspectorPort = options.inspect ? await freePort() : undefined;
  const ownVars = typeof options.vars === "function" ? options.vars(port) : options.vars;
  const vars = Object.entries({ ...localVars(), ...ownVars }).flatMap(([k, v]) => ["--var", `${k}:${v}`]);
  const child = spawn(
    process.execPath,
    [
      DEV_SERVER,
      "--port",
      String(port),
      "--persist-to",
      persistTo,
      ...(inspectorPort ? ["--inspector-port", String(inspectorPort)] : []),
      ...(options.assets ? ["--assets", options.assets] : []),
      ...(options.minify === false ? ["--no-minify"] : []),
      ...vars,
    ],
    { cwd: ROOT, env: QUIET_ENV, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  // Only the tail is kept (shown if start-up fails): a long run may log without end.
  let output = "";
  const collect = (d) => {
    output = (output + d).slice(-64 * 1024);
    options.log?.(String(d));
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const url = `http://127.0.0.1:${port}`;
  /** SIGTERM shuts down; SIGKILL is a crash: the old instance runs no handler after it. */
  const stop = async (signal = "SIGTERM") => {
    if (child.exitCode !== null) return;
    process.kill(-child.pid, signal);
    await exited;
  };
  try {
    await waitForHealth(url, exited);
  } catch (error) {
    await stop();
    throw new Error(`${error.message}\n${output}`);
  }
  const inspector = inspectorPort ? `ws://127.0.0.1:${inspectorPort}/core:user:tapgate` : undefined;
  return { url, persistTo, pid: child.pid, inspector, stop };
}

async function waitForHealth(url, exited) {
  let dead = false;
  exited.then(() => (dead = true));
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (dead) throw new Error("the dev server exited before it was ready");
    const ok = await fetch(`${url}/v1/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200)); // polling a server that is starting, not a test sync
  }
  throw new Error("the dev server did not become ready within 90 s");
}
