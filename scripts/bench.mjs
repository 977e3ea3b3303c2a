/**
 * `npm run bench`: on wrangler's local runtime (dev-server.mjs, as `npm start` runs it), driven
 * through the built SDK and a dashboard's live feed, from one run: the floors (an HTTP round
 * trip and a WebSocket ping), an agent's request reaching the live feed, decision latency and
 * throughput with 16 decisions in flight, session capacity, a storm of dropped agent sockets (and
 * the slowest trivial request meanwhile), and the Worker's bundle size. Each time is also given
 * as a ratio to the floor measured in the same run.
 * Figures only, no thresholds.
 *
 *   node scripts/bench.mjs [--n 200] [--sessions 1000] [--pings 500] [--live 100] [--inflight 16] [--via-proxy] [--profile] [--json]
 *
 * `--profile` serves the Worker unminified and prints a CPU profile (self and total time by function) of the
 * throughput and storm phases (cpu-profile.mjs); its capacity phase and storm default to 300 sessions.
 *
 * It talks to the Worker's runtime directly; `--via-proxy` goes through wrangler's dev proxy
 * instead, as a browser pointed at `npm start` does (see runtime-url.mjs for the difference).
 *
 * BENCH_TRACE=1 also prints each storm probe as it returns and the Worker's own log (`console.warn`).
 *
 * The phases and their timing are here; beside it in bench/: the clients (client.mjs), the
 * storm (storm.mjs), what is read of the runtime's processes (runtime.mjs), the report (print.mjs).
 */
import { execFileSync } from "node:child_process";
import { parseArgs } from "node:util";
import { ask, OPEN_PARALLEL, openLiveFeed, openSessions, resetsRetried, signUp, waitVisible } from "./bench/client.mjs";
import { printReport } from "./bench/print.mjs";
import { bundleSize, mb, runtimeIdle, workerdCpuMs, workerdRss } from "./bench/runtime.mjs";
import { storm } from "./bench/storm.mjs";
import { startCpuProfile } from "./cpu-profile.mjs";
import { ROOT, startLocalWorker } from "./local-worker.mjs";
import { runtimeUrl } from "./runtime-url.mjs";

const { values: argv } = parseArgs({
  options: {
    n: { type: "string", default: "200" },
    sessions: { type: "string" },
    pings: { type: "string", default: "500" },
    live: { type: "string", default: "100" },
    inflight: { type: "string", default: "16" },
    json: { type: "boolean", default: false },
    "via-proxy": { type: "boolean", default: false },
    profile: { type: "boolean", default: false },
  },
});
/** How long the live phase's agent takes to run an allowed tool before it asks again. */
const TOOL_RUN_MS = 20;
// With the inspector attached, a 1,000-socket storm leaves the runtime's connections to wrangler
// half-closed (CLOSE-WAIT) until it runs out of file descriptors: --profile storms 300 by default.
const sessionsDefault = argv.profile ? "300" : "1000";
const [N, M, PINGS, LIVE_N, IN_FLIGHT] = [
  argv.n,
  argv.sessions ?? sessionsDefault,
  argv.pings,
  argv.live,
  argv.inflight,
].map(Number);
/** The gate holds at most 32 pending requests per session. */
const BATCH = 25;
let phase = "setup";
const progress = (name, msg) => {
  phase = name;
  process.stderr.write(`bench: ${name}: ${msg}\n`);
};
/** SDK warnings (such as dropped sockets) are part of the result, so they are counted per phase, not streamed. */
const sdkWarnings = {};
const onLog = (level, message) => {
  const key = `${phase}: ${message}`;
  if (level === "warn" || level === "error") sdkWarnings[key] = (sdkWarnings[key] ?? 0) + 1;
};

// stdout stays clean for --json: the builds' own output goes to stderr. The PWA is built as
// `npm start` builds it: wrangler serves (and bundles) pwa/dist, so a fresh clone needs it.
for (const build of ["build:sdk", "build:pwa"]) {
  execFileSync("npm", ["run", "--silent", build], { cwd: ROOT, stdio: ["ignore", 2, 2] });
}

progress("bundle", "wrangler deploy --dry-run");
const bundle = bundleSize();
const { Tapgate } = await import("../sdk/dist/index.js");

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] : Number.NaN;
};
const stats = (xs) => ({ n: xs.length, p50: pct(xs, 50), p99: pct(xs, 99) });

const worker = await startLocalWorker({
  minify: !argv.profile,
  inspect: argv.profile,
  log: process.env.BENCH_TRACE ? (line) => process.stderr.write(line) : undefined,
});
const report = { n: N, sessions: M, inFlight: IN_FLIGHT, via: argv["via-proxy"] ? "proxy" : "runtime", bundle };
let failures = 0;
const failed = () => {
  failures++;
  return null;
};
try {
  // The Worker's runtime itself, or (--via-proxy) through wrangler's dev proxy in front of it (runtime-url.mjs).
  const target = argv["via-proxy"] ? worker.url : await runtimeUrl(worker.pid, worker.url);
  const { human, key, cookie } = await signUp(target);
  const gate = new Tapgate({ url: target, apiKey: key, onLog });
  const run = Date.now().toString(36);
  const live = await openLiveFeed(target, cookie);

  /** From just before the decision POST to the SDK's promise resolving; null if it was not a clean decision. */
  async function decide(a, visible) {
    const approval = visible.get(a.key);
    if (!approval || a.settled) return failed();
    const t0 = performance.now();
    const res = await human(`/v1/approvals/${approval.id}/decision`, {
      method: "POST",
      body: JSON.stringify({ optionId: "allow", requestHash: approval.requestHash }),
    });
    await res.arrayBuffer();
    const responded = performance.now();
    const { at, answer } = await a.answered;
    if (res.status !== 200 || answer.outcome.optionId !== "allow") return failed();
    decisionResponses.push(responded - t0);
    return at - t0;
  }
  /** The human's own round trip for the same POSTs, to tell server time from delivery time. */
  const decisionResponses = [];

  progress("sequential", `${N} decisions, one at a time`);
  const seqSession = await gate.session(`bench-${run}-seq`, { title: "bench" });
  const seq = [];
  // A few unrecorded rounds first, so JIT and first-use costs do not land in the figures.
  for (let done = -5; done < N; ) {
    const asks = Array.from({ length: Math.min(BATCH, N - done) }, (_, i) => ask(seqSession, `c${done + i}`));
    const visible = await waitVisible(human, asks);
    for (const a of asks) {
      const ms = await decide(a, visible);
      if (done++ >= 0 && ms !== null) seq.push(ms);
    }
  }
  report.sequential = stats(seq);
  report.decisionResponse = stats(decisionResponses);

  progress("live", `${LIVE_N} requests, each until it shows on the dashboard's live feed`);
  const liveMs = [];
  for (let i = -5; i < LIVE_N; i++) {
    const toolCallId = `l${i}`;
    let t0 = 0;
    const shown = new Promise((resolve) => {
      const listener = (event, at) => {
        if (event.type !== "approval" || event.approval.snapshot?.toolCall?.toolCallId !== toolCallId) return;
        if (event.approval.sessionId !== seqSession.id) return;
        live.off(listener);
        resolve({ at, approval: event.approval });
      };
      live.on(listener);
    });
    t0 = performance.now();
    const a = ask(seqSession, toolCallId);
    const { at, approval } = await shown;
    if (i >= 0) liveMs.push(at - t0);
    await decide(a, new Map([[a.key, approval]]));
    // The agent runs its tool before it asks again: the decision's trailing work (its outbox to
    // D1, its ladder's end) is not counted in the next ask, as it would be on the local runtime's
    // one thread, where it runs in front of that ask's frame.
    await new Promise((resolve) => setTimeout(resolve, TOOL_RUN_MS));
  }
  report.liveFeed = stats(liveMs);

  progress("throughput", `${N} sessions with one request each, ${IN_FLIGHT} decisions in flight`);
  const conc = await openSessions(gate, `bench-${run}-conc`, N);
  const concAsks = conc.map((s) => ask(s, "c0"));
  const concVisible = await waitVisible(human, concAsks);
  const concMs = [];
  const queue = [...concAsks];
  const throughputProfile = argv.profile ? await startCpuProfile(worker.inspector) : null;
  const cpuBefore = workerdCpuMs(worker.pid);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      for (let a = queue.shift(); a; a = queue.shift()) {
        const ms = await decide(a, concVisible);
        if (ms !== null) concMs.push(ms);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  report.concurrent = stats(concMs);
  const cpuAfter = workerdCpuMs(worker.pid);
  const cpuPerDecision = (kind) => (cpuAfter[kind] - cpuBefore[kind]) / Math.max(1, concMs.length);
  report.throughput = {
    decisions: concMs.length,
    seconds,
    perSecond: concMs.length / seconds,
    runtimeCpuMsPerDecision: { user: cpuPerDecision("user"), system: cpuPerDecision("system") },
    runtimeBusy: (cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system) / (seconds * 1000),
  };
  if (throughputProfile) report.profiles = { throughput: await throughputProfile.stop() };
  for (const s of conc) s.close();
  await runtimeIdle(worker.pid);

  progress("floors", `${PINGS} WebSocket pings and HTTP health checks`);
  const pings = [];
  const http = [];
  for (let i = -20; i < PINGS; i++) {
    const ms = await seqSession.ping();
    if (i >= 0) pings.push(ms);
  }
  for (let i = -20; i < PINGS; i++) {
    const t0 = performance.now();
    await (await fetch(`${target}/v1/health`)).arrayBuffer();
    if (i >= 0) http.push(performance.now() - t0);
  }
  report.wsPing = stats(pings);
  report.httpFloor = stats(http);
  const floor = report.httpFloor.p50 + report.wsPing.p50;
  report.floorMs = floor;
  report.ratioSequential = report.sequential.p50 / floor;
  report.ratioSequentialP99 = report.sequential.p99 / floor;
  // The machine's own tail: a request that does nothing, read against the same floor.
  report.ratioTrivialP99 = (report.httpFloor.p99 + report.wsPing.p99) / floor;
  report.ratioConcurrent = report.concurrent.p50 / floor;
  report.ratioLiveFeed = report.liveFeed.p50 / floor;

  progress("capacity", `${M} sessions opened ${OPEN_PARALLEL} at a time, one pending request each`);
  const memBefore = { workerd: workerdRss(worker.pid), nodeMB: mb(process.memoryUsage().rss) };
  const cap = await openSessions(gate, `bench-${run}-cap`, M);
  const capAsks = cap.map((s) => ask(s, "c0"));
  const visible = await waitVisible(human, capAsks, 120_000);
  const memAfter = { workerd: workerdRss(worker.pid), nodeMB: mb(process.memoryUsage().rss) };
  report.capacity = {
    opened: cap.length,
    stillOpen: cap.filter((s) => s.state === "open").length,
    pendingVisible: capAsks.filter((a) => visible.has(a.key) && !a.settled).length,
    workerdProcs: memAfter.workerd.procs,
    workerdRssMB: { before: memBefore.workerd.rssMB, after: memAfter.workerd.rssMB },
    nodeRssMB: { before: memBefore.nodeMB, after: memAfter.nodeMB },
  };

  progress("storm", `${cap.length} agent sockets dropped at once, probing the service meanwhile`);
  const stormProfile = argv.profile ? await startCpuProfile(worker.inspector) : null;
  report.storm = await storm({
    sessions: cap,
    asks: capAsks,
    shown: visible,
    live,
    human,
    target,
    cookie,
    trace: process.env.BENCH_TRACE ? (line) => progress("storm", line) : null,
  });
  if (stormProfile) report.profiles.storm = await stormProfile.stop();
  report.storm.ratioResolved = report.storm.resolvedMs / floor;
  report.storm.ratioSlowestProbe = report.storm.slowestProbeMs / floor;

  report.failures = failures;
  report.resets = resetsRetried();
  progress("close", "closing the sessions and stopping the Worker");
  live.close();
  gate.close();
} finally {
  await worker.stop();
}

report.sdkWarnings = sdkWarnings;
if (argv.json) console.log(JSON.stringify(report, null, 2));
else printReport(report);
