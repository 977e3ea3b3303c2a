/**
 * `npm start`: Tapgate on this machine, with no Cloudflare account and no other service.
 * Creates `.dev.vars` (local mode) if missing, builds the PWA, applies the D1 migrations to the
 * local database in `.wrangler/state`, and runs the Worker on wrangler's local runtime at
 * http://localhost:8787 (`dev-server.mjs`: as `wrangler dev` does, rebuilt when a source file
 * changes, but with no DevTools inspector unless `-- --inspector-port 9229` asks for one).
 * Other arguments go to dev-server.mjs (`-- --ip 0.0.0.0` for a phone on the same network; then
 * the dev outbox asks for a fresh token, printed here with its URL).
 */
import { execFileSync, spawn } from "node:child_process";
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { localVars, outboxTokenFor } from "./local-vars.mjs";
import { applyMigrations, ROOT } from "./local-worker.mjs";

const devVars = join(ROOT, ".dev.vars");
if (!existsSync(devVars)) {
  const lines = Object.entries(localVars()).map(([key, value]) => `${key}=${value}`);
  const header = [
    "# Local mode, written by `npm start`. Never deploy these values.",
    "# DEV_OUTBOX=1: sign-in mail is printed here and readable at GET /v1/dev/outbox (from this machine only).",
    "# VAPID_*: this machine's Web Push keys.",
    "# RATE_LIMIT_SECRET: keys the hashed addresses and clients of the rate limits.",
  ];
  writeFileSync(devVars, `${[...header, ...lines].join("\n")}\n`, { mode: 0o600 });
  console.log("created .dev.vars (local mode, fresh VAPID keys)");
} else {
  // Settings added since this .dev.vars was written (such as RATE_LIMIT_SECRET) are appended.
  const text = readFileSync(devVars, "utf8");
  const present = new Set(text.match(/^[A-Z_]+(?==)/gm) ?? []);
  const missing = Object.entries(localVars()).filter(([key]) => !present.has(key) && !key.startsWith("VAPID_"));
  if (missing.length) {
    const lines = missing.map(([key, value]) => `${key}=${value}\n`).join("");
    appendFileSync(devVars, text === "" || text.endsWith("\n") ? lines : `\n${lines}`);
    console.log(`added ${missing.map(([key]) => key).join(", ")} to .dev.vars`);
  }
}

// wrangler serves the PWA from pwa/dist, so it must exist before the Worker starts.
execFileSync("npm", ["run", "--silent", "build:pwa"], { cwd: ROOT, stdio: "inherit" });
await applyMigrations(undefined, "inherit");
const port = process.env.PORT ?? "8787";
// The last --ip given wins (dev-server.mjs reads it so); off loopback, the outbox needs a token.
const { values: listen } = parseArgs({
  args: ["--ip", "localhost", ...process.argv.slice(2)],
  options: { ip: { type: "string", multiple: true } },
  strict: false,
});
const ip = /** @type {string[]} */ (listen.ip).at(-1) ?? "localhost";
const outboxToken = outboxTokenFor(ip);
if (outboxToken) {
  const host = ip === "0.0.0.0" || ip === "::" ? "<this machine's address>" : ip;
  console.log(
    `listening on ${ip}: the dev outbox needs its token: http://${host}:${port}/v1/dev/outbox?token=${outboxToken}`,
  );
}
const server = spawn(
  process.execPath,
  [
    join(ROOT, "scripts", "dev-server.mjs"),
    "--ip",
    "localhost",
    "--port",
    port,
    "--watch",
    "--log-level",
    "log",
    ...(outboxToken ? ["--var", `DEV_OUTBOX_TOKEN:${outboxToken}`] : []),
    ...process.argv.slice(2),
  ],
  {
    cwd: ROOT,
    stdio: "inherit",
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
  },
);
server.on("exit", (code) => process.exit(code ?? 0));
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => server.kill(signal));
