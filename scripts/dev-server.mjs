/**
 * The Worker under wrangler's local runtime (workerd, local D1 and Durable Objects), as
 * `wrangler dev` runs it but without its DevTools inspector unless asked for: `wrangler dev`
 * always attaches one and turns on DevTools' Network domain, so every subrequest of the Worker
 * (each D1 and Durable Object call) is relayed to wrangler's Node and written to its debug log,
 * most of a core under load on a small machine (docs/capacity.md). Run as its own process by
 * `local-worker.mjs` and `start.mjs`; prints `ready <url>` once the Worker answers.
 *
 *   node scripts/dev-server.mjs --port 8787 [--ip 127.0.0.1] [--persist-to dir] [--inspector-port n]
 *                               [--assets dir] [--no-minify] [--watch] [--log-level warn]
 *                               [--var KEY:value ...]
 *
 * `--watch` rebuilds and restarts the Worker when a source file changes.
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { unstable_startWorker } from "wrangler";
import { ROOT } from "./local-worker.mjs";

const { values: argv } = parseArgs({
  options: {
    ip: { type: "string", default: "127.0.0.1" },
    port: { type: "string", default: "8787" },
    "persist-to": { type: "string" },
    "inspector-port": { type: "string" },
    assets: { type: "string" },
    "no-minify": { type: "boolean", default: false },
    watch: { type: "boolean", default: false },
    "log-level": { type: "string", default: "warn" },
    var: { type: "string", multiple: true, default: [] },
  },
});

const bindings = Object.fromEntries(
  argv.var.map((pair) => {
    const at = pair.indexOf(":");
    return [pair.slice(0, at), { type: "plain_text", value: pair.slice(at + 1) }];
  }),
);
const inspectorPort = argv["inspector-port"];
const worker = await unstable_startWorker({
  config: join(ROOT, "wrangler.toml"),
  bindings,
  ...(argv.assets ? { assets: argv.assets } : {}),
  build: {
    // `wrangler dev` derives this from the compatibility flags; its programmatic API leaves it to the caller.
    nodejsCompatMode: (config) => (config.compatibility_flags.includes("nodejs_compat") ? "v2" : null),
    ...(argv["no-minify"] ? { minify: false } : {}),
  },
  dev: {
    server: { hostname: argv.ip, port: Number(argv.port) },
    inspector: inspectorPort ? { hostname: "127.0.0.1", port: Number(inspectorPort) } : false,
    persist: argv["persist-to"],
    logLevel: argv["log-level"],
    watch: argv.watch,
  },
});
await worker.ready;
console.log(`ready ${await worker.url}`);

const stop = async () => {
  await worker.dispose();
  process.exit(0);
};
for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, stop);
