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
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { get as httpGet } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import WebSocket from "ws";
import { startCpuProfile } from "./cpu-profile.mjs";
import { ROOT, startLocalWorker } from "./local-worker.mjs";
import { runtimeUrl, workerdUnder } from "./runtime-url.mjs";

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
/** Sessions opened at once, so that a 1000-session run does not trip the SDK's connect timeout. */
const OPEN_PARALLEL = 50;
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

/** The Worker's bundle as `wrangler deploy --dry-run` builds it (before the Worker starts, so it skews nothing). */
function bundleSize() {
  const outdir = mkdtempSync(join(tmpdir(), "tapgate-bundle-"));
  const out = execFileSync(
    join(ROOT, "node_modules", ".bin", "wrangler"),
    ["deploy", "--dry-run", "--outdir", outdir],
    {
      cwd: ROOT,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
      encoding: "utf8",
      stdio: ["ignore", "pipe", 2],
    },
  );
  const m = /Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(out);
  return m ? { kib: Number(m[1]), gzipKiB: Number(m[2]) } : null;
}
progress("bundle", "wrangler deploy --dry-run");
const bundle = bundleSize();
const { Tapgate } = await import("../sdk/dist/index.js");

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] : Number.NaN;
};
const stats = (xs) => ({ n: xs.length, p50: pct(xs, 50), p99: pct(xs, 99) });
const mb = (bytes) => Math.round(bytes / 1024 / 1024);

/** RSS of the workerd processes under the wrangler process. */
function workerdRss(rootPid) {
  const pids = workerdUnder(rootPid);
  const kb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
  return { procs: pids.length, rssMB: mb(pids.reduce((sum, pid) => sum + kb(pid) * 1024, 0)) };
}

/**
 * CPU time (ms, user and system) the workerd processes under the wrangler process have used so
 * far: read before and after a phase, it tells a saturated runtime thread from one that waits.
 */
function workerdCpuMs(rootPid) {
  const ticks = workerdUnder(rootPid).map((pid) => {
    // Fields after the command's closing parenthesis; utime and stime are the 14th and 15th of the line.
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return { user: Number(fields[11]), system: Number(fields[12]) };
  });
  const msPerTick = 1000 / 100; // USER_HZ is 100 on Linux
  return {
    user: ticks.reduce((sum, t) => sum + t.user, 0) * msPerTick,
    system: ticks.reduce((sum, t) => sum + t.system, 0) * msPerTick,
  };
}

/**
 * Waits until the runtime is idle (under 10 % of one core over 500 ms; at most 15 s), so that
 * work a phase leaves behind is not timed in the next one: the throughput phase's 200 closed
 * sessions each send their hub report and D1 flush within a random 2 s (`CLOSE_SPREAD_MS`),
 * which otherwise runs in front of the floors' health checks.
 */
async function runtimeIdle(rootPid, limitMs = 15_000) {
  const windowMs = 500;
  const busyMs = (cpu) => cpu.user + cpu.system;
  const until = performance.now() + limitMs;
  for (let before = busyMs(workerdCpuMs(rootPid)); performance.now() < until; ) {
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    const after = busyMs(workerdCpuMs(rootPid));
    if (after - before < 0.1 * windowMs) return;
    before = after;
  }
}

/** The human side, as test/sdk/helpers.ts does it: sign up through the dev outbox, then cookie requests. */
async function signUp(url) {
  const email = `bench-${process.pid}-${Date.now().toString(36)}@example.com`;
  const post = (path, body) =>
    fetch(`${url}${path}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Origin: url },
      body: JSON.stringify(body),
    });
  await post("/v1/auth/signup", { email, name: "Bench", team: "Bench team" });
  const outbox = await (await fetch(`${url}/v1/dev/outbox?to=${encodeURIComponent(email)}`)).json();
  const token = new URL(outbox.messages.at(-1)?.link ?? "").searchParams.get("token");
  const confirmed = await post("/v1/auth/link", { token });
  const cookie = (confirmed.headers.get("Set-Cookie") ?? "").split(";")[0];
  const human = (path, init = {}) =>
    fetch(`${url}${path}`, {
      ...init,
      headers: { Cookie: cookie, Origin: url, "Content-Type": "application/json", ...init.headers },
    });
  const { key } = await (await human("/v1/keys", { method: "POST", body: JSON.stringify({ label: "bench" }) })).json();
  // The team's default quotas (docs/limits.md) would refuse a benchmark's burst: the owner raises them to their maxima.
  const policy = await (await human("/v1/policy")).json();
  const limits = { requestsPerKeyPerMinute: 6_000, burstPerKey: 1_000, pendingPerTeam: 10_000, pendingPerKey: 10_000 };
  const raised = await human("/v1/policy", { method: "PUT", body: JSON.stringify({ ...policy, limits }) });
  if (!raised.ok) throw new Error(`raising the team's quotas answered ${raised.status}: ${await raised.text()}`);
  return { human, key, cookie };
}

/**
 * A signed-in dashboard's live feed (`GET /v1/live`): every event is handed to the listeners,
 * timestamped on arrival.
 */
function openLiveFeed(url, cookie) {
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}/v1/live`, { headers: { Cookie: cookie, Origin: url } });
  const listeners = new Set();
  ws.on("message", (data) => {
    const text = data.toString();
    if (text === "pong") return;
    const at = performance.now();
    const event = JSON.parse(text);
    for (const listener of listeners) listener(event, at);
  });
  return new Promise((resolve, reject) => {
    ws.once("error", reject);
    ws.once("open", () =>
      resolve({
        on: (listener) => listeners.add(listener),
        off: (listener) => listeners.delete(listener),
        close: () => ws.close(),
      }),
    );
  });
}

/** Every pending request of mine. Outside any measured interval, so a connection reset is retried (and counted). */
async function listPending(human) {
  const all = [];
  let cursor = null;
  do {
    const q = `state=pending&scope=mine&limit=200${cursor ? `&cursor=${cursor}` : ""}`;
    const page = await retried(async () => (await human(`/v1/approvals?${q}`)).json());
    all.push(...page.approvals);
    cursor = page.cursor;
  } while (cursor);
  return all;
}

/** A pooled keep-alive connection the runtime closed as the request went out: reset, or "other side closed". */
const RESET_CODES = new Set(["ECONNRESET", "UND_ERR_SOCKET"]);

let resets = 0;
/** Runs a read (safe to repeat) again when its connection was reset under it. */
async function retried(get) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await get();
    } catch (error) {
      if (attempt === 3 || !RESET_CODES.has(error?.cause?.code)) throw error;
      resets++;
    }
  }
}

const keyOf = (sessionId, toolCallId) => `${sessionId}|${toolCallId}`;

/**
 * Polls the D1 index (written just after the request) until each ask is visible, or already answered
 * without a human (a dropped socket fails it closed): outside any measured interval.
 */
async function waitVisible(human, asks, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  const wanted = new Set(asks.map((a) => a.key));
  let found = new Map();
  while (Date.now() < deadline) {
    found = new Map();
    for (const a of await listPending(human)) {
      const k = keyOf(a.sessionId, a.snapshot.toolCall.toolCallId);
      if (wanted.has(k)) found.set(k, a);
    }
    if (asks.every((a) => found.has(a.key) || a.settled)) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return found;
}

function ask(session, toolCallId) {
  const a = { key: keyOf(session.id, toolCallId), settled: false };
  a.answered = session
    .requestPermission({
      sessionId: session.id,
      toolCall: { toolCallId, title: "git push --force", kind: "execute", rawInput: { command: "git push" } },
      options: [
        { optionId: "allow", name: "Allow once", kind: "allow_once" },
        { optionId: "deny", name: "Deny", kind: "reject_once" },
      ],
    })
    // Timestamped on resolution, so a slow decision response cannot inflate the figure.
    .then((answer) => {
      a.settled = true;
      return { at: performance.now(), answer };
    });
  return a;
}

async function openSessions(gate, prefix, count) {
  const sessions = [];
  for (let i = 0; i < count; i += OPEN_PARALLEL) {
    const ids = Array.from({ length: Math.min(OPEN_PARALLEL, count - i) }, (_, j) => `${prefix}-${i + j}`);
    const opened = await Promise.allSettled(ids.map((id) => gate.session(id, { title: "bench" })));
    sessions.push(...opened.filter((r) => r.status === "fulfilled").map((r) => r.value));
  }
  return sessions;
}

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
  report.storm = await storm(cap, capAsks, visible);
  if (stormProfile) report.profiles.storm = await stormProfile.stop();
  report.storm.ratioResolved = report.storm.resolvedMs / floor;
  report.storm.ratioSlowestProbe = report.storm.slowestProbeMs / floor;

  /**
   * Drops every socket at once (each session closes; the SDK answers its request fail-closed)
   * and times until the live feed has shown every one of those requests resolved. Meanwhile one
   * probe at a time asks a trivial question (health) and a D1 listing; the slowest is reported.
   */
  async function storm(sessions, asks, shown) {
    const waiting = new Set(asks.flatMap((a) => (shown.has(a.key) && !a.settled ? [shown.get(a.key).id] : [])));
    const expected = waiting.size;
    let resolvedAt = null;
    const started = performance.now();
    const allResolved = new Promise((resolve) => {
      const listener = (event, at) => {
        if (event.type !== "resolved" || !waiting.delete(event.approval.id) || waiting.size > 0) return;
        live.off(listener);
        resolvedAt = at;
        resolve();
      };
      live.on(listener);
    });
    const probes = [];
    let probing = true;
    const probe = (async () => {
      for (let i = 0; probing; i++) {
        const path = i % 2 === 0 ? "/v1/health" : "/v1/approvals?state=pending&limit=1";
        const t = performance.now();
        try {
          const res = await human(path, { signal: AbortSignal.timeout(300_000) });
          await res.arrayBuffer();
          probes.push({ path, ms: performance.now() - t, ok: res.ok });
          if (process.env.BENCH_TRACE)
            progress("storm", `${path} ${res.status} in ${(performance.now() - t).toFixed(0)} ms`);
        } catch (error) {
          probes.push({ path, ms: performance.now() - t, ok: false, error: error?.cause?.code ?? error?.name });
        }
      }
    })();
    // The same listing over a new TCP connection each time, so a stall of one pooled connection shows as such.
    const fresh = (async () => {
      while (probing) {
        const t = performance.now();
        const status = await new Promise((resolve) => {
          const req = httpGet(
            `${target}/v1/approvals?state=pending&limit=1`,
            { agent: false, headers: { Cookie: cookie, Origin: target }, timeout: 300_000 },
            (res) => res.resume().on("end", () => resolve(res.statusCode)),
          );
          req.on("error", (error) => resolve(error.code ?? 0));
          req.on("timeout", () => req.destroy());
        });
        const path = "/v1/approvals (new connection)";
        probes.push({
          path,
          ms: performance.now() - t,
          ok: status === 200,
          error: status === 200 ? undefined : status,
        });
        if (process.env.BENCH_TRACE) progress("storm", `${path} ${status} in ${(performance.now() - t).toFixed(0)} ms`);
      }
    })();
    for (const s of sessions) s.close();
    // Closing a session answers its requests at once; one that does not within 10 s is counted, not waited for.
    const unanswered = { answer: { outcome: { outcome: "unanswered" } } };
    const answered = await Promise.all(
      asks.map((a) => Promise.race([a.answered, new Promise((r) => setTimeout(() => r(unanswered), 10_000))])),
    );
    const deniedLocally = answered.filter(
      ({ answer }) =>
        answer.outcome.outcome !== "unanswered" &&
        (answer.outcome.outcome !== "selected" || answer.outcome.optionId !== "allow"),
    ).length;
    const notAnswered = answered.filter((a) => a === unanswered).length;
    // Given up on after 5 minutes; the timer is cleared, so a finished run does not wait it out.
    let giveUp;
    await Promise.race([allResolved, new Promise((r) => (giveUp = setTimeout(r, 300_000)))]);
    clearTimeout(giveUp);
    probing = false;
    await Promise.all([probe, fresh]);
    return {
      dropped: sessions.length,
      expected,
      resolved: expected - waiting.size,
      resolvedMs: resolvedAt === null ? Number.NaN : resolvedAt - started,
      agentsDenied: deniedLocally,
      agentsUnanswered: notAnswered,
      probes: probes.length,
      slowestProbeMs: Math.max(...probes.map((p) => p.ms)),
      slowestProbe: probes.reduce((a, b) => (b.ms > a.ms ? b : a), probes[0]).path,
      failedProbes: probes.filter((p) => !p.ok).length,
      probeErrors: probes.filter((p) => !p.ok).map((p) => `${p.path}: ${p.error ?? "not ok"}`),
    };
  }

  report.failures = failures;
  report.resets = resets;
  progress("close", "closing the sessions and stopping the Worker");
  live.close();
  gate.close();
} finally {
  await worker.stop();
}

report.sdkWarnings = sdkWarnings;
if (argv.json) {
  console.log(JSON.stringify(report, null, 2));
} else {
  const f = (x) => x.toFixed(2).padStart(8);
  const row = (name, s) => console.log(`${name.padEnd(32)}${String(s.n).padStart(6)}${f(s.p50)}${f(s.p99)}`);
  const c = report.capacity;
  const st = report.storm;
  const x = (ratio) => `${ratio.toFixed(2)}x floor`;
  console.log(
    report.via === "proxy"
      ? "through wrangler's dev proxy (--via-proxy)"
      : "to the Worker's runtime, not through wrangler's dev proxy",
  );
  console.log(`${"latency (ms)".padEnd(32)}${"n".padStart(6)}${"p50".padStart(8)}${"p99".padStart(8)}`);
  row("request -> dashboard live feed", report.liveFeed);
  row("decision -> agent, sequential", report.sequential);
  row("decision POST -> its response", report.decisionResponse);
  row(`decision -> agent, ${IN_FLIGHT} in flight`, report.concurrent);
  row("WebSocket ping -> pong", report.wsPing);
  row("HTTP GET /v1/health", report.httpFloor);
  console.log(`floor (http p50 + ping p50): ${report.floorMs.toFixed(2)} ms`);
  console.log("");
  const table = [
    [
      "agent asks -> request on the live feed, p50",
      `${report.liveFeed.p50.toFixed(1)} ms`,
      x(report.ratioLiveFeed),
      "<= 2x",
    ],
    [
      "decision -> agent, sequential, p50",
      `${report.sequential.p50.toFixed(1)} ms`,
      x(report.ratioSequential),
      "<= 2x",
    ],
    [
      "decision -> agent, sequential, p99",
      `${report.sequential.p99.toFixed(1)} ms`,
      x(report.ratioSequentialP99),
      "<= 3x",
    ],
    [
      `decisions per second (${N} sessions, ${IN_FLIGHT} in flight)`,
      `${report.throughput.perSecond.toFixed(0)}/s`,
      `${((report.throughput.perSecond * report.floorMs) / 1000).toFixed(2)} per floor`,
      ">= 300/s",
    ],
    [
      `${st.dropped} agent sockets dropped: all resolved`,
      `${(st.resolvedMs / 1000).toFixed(2)} s (${st.resolved}/${st.expected})`,
      x(st.ratioResolved),
      "<= 5 s",
    ],
    [
      "... meanwhile the slowest trivial request",
      `${(st.slowestProbeMs / 1000).toFixed(2)} s (${st.slowestProbe}; ${st.probes} probes, ${st.failedProbes} failed)`,
      x(st.ratioSlowestProbe),
      "<= 1 s",
    ],
    [
      `${M} sessions opened ${OPEN_PARALLEL} at a time, each holding a request`,
      `${c.opened} opened, ${c.pendingVisible} pending`,
      "",
      `${M}`,
    ],
    [
      "Worker bundle (wrangler deploy --dry-run), gzip",
      report.bundle ? `${report.bundle.gzipKiB.toFixed(1)} KiB` : "n/a",
      "",
      "<= 250 KB",
    ],
  ];
  const widths = [0, 1, 2].map((i) => Math.max(...table.map((r) => r[i].length)));
  for (const r of table)
    console.log(`${r[0].padEnd(widths[0])}  ${r[1].padEnd(widths[1])}  ${r[2].padEnd(widths[2])}  goal ${r[3]}`);
  console.log("");
  console.log(
    st.agentsDenied === st.dropped
      ? `storm: every agent answered fail-closed (${st.agentsDenied}/${st.dropped} denied locally)`
      : `storm: ${st.agentsDenied}/${st.dropped} agents answered fail-closed, ${st.agentsUnanswered} not answered within 10 s`,
  );
  console.log(
    `memory (RSS MB): workerd x${c.workerdProcs} ${c.workerdRssMB.before} -> ${c.workerdRssMB.after}, node client ${c.nodeRssMB.before} -> ${c.nodeRssMB.after}`,
  );
  const cpu = report.throughput.runtimeCpuMsPerDecision;
  console.log(
    `runtime CPU per decision (throughput phase): ${cpu.user.toFixed(2)} ms user + ${cpu.system.toFixed(2)} ms system; ${(report.throughput.runtimeBusy * 100).toFixed(0)} % of one core over the phase`,
  );
  console.log(
    `the machine's own tail: health check p99 + ping p99 = ${(report.httpFloor.p99 + report.wsPing.p99).toFixed(1)} ms, ${x(report.ratioTrivialP99)} (a sequential decision's p99: ${x(report.ratioSequentialP99)})`,
  );
  console.log(`failed decisions: ${report.failures}`);
  for (const e of st.probeErrors) console.log(`storm probe failed: ${e}`);
  for (const [phase, profile] of Object.entries(report.profiles ?? {})) {
    for (const kind of ["self", "total"]) {
      console.log(
        `\nCPU profile of the Worker's isolate, ${phase}: ${profile.totalMs.toFixed(0)} ms sampled, ${kind} time`,
      );
      for (const r of profile[kind])
        console.log(`${r.ms.toFixed(1).padStart(9)} ms ${(r.share * 100).toFixed(1).padStart(5)}%  ${r.fn}`);
    }
  }
  if (report.resets)
    console.log(`connection resets retried while listing (outside any measured interval): ${report.resets}`);
  for (const [what, n] of Object.entries(sdkWarnings)) console.log(`SDK warning x${n} during ${what}`);
}
