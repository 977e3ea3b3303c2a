/**
 * `npm run bench`: decision latency, WebSocket and HTTP floors, and session capacity of the Worker
 * under `wrangler dev`, driven through the built SDK. Figures only, no thresholds.
 *
 *   node scripts/bench.mjs [--n 200] [--sessions 1000] [--pings 500] [--json]
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { ROOT, startLocalWorker } from "./local-worker.mjs";

const { values: argv } = parseArgs({
  options: {
    n: { type: "string", default: "200" },
    sessions: { type: "string", default: "1000" },
    pings: { type: "string", default: "500" },
    json: { type: "boolean", default: false },
  },
});
const [N, M, PINGS] = [argv.n, argv.sessions, argv.pings].map(Number);
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

// stdout stays clean for --json: the build's own output goes to stderr.
execFileSync("npm", ["run", "--silent", "build:sdk"], { cwd: ROOT, stdio: ["ignore", 2, 2] });
const { Tapgate } = await import("../sdk/dist/index.js");

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] : Number.NaN;
};
const stats = (xs) => ({ n: xs.length, p50: pct(xs, 50), p99: pct(xs, 99) });
const mb = (bytes) => Math.round(bytes / 1024 / 1024);

/** RSS of the workerd processes under the wrangler process; /proc gives the tree without depending on ps flags. */
function workerdRss(rootPid) {
  const children = new Map();
  const comm = new Map();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const close = stat.lastIndexOf(")"); // comm may itself contain spaces or parentheses
      const ppid = Number(stat.slice(close + 2).split(" ")[1]);
      comm.set(Number(name), stat.slice(stat.indexOf("(") + 1, close));
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {} // processes come and go while we walk
  }
  let procs = 0;
  let rss = 0;
  for (const queue = [rootPid]; queue.length; ) {
    const pid = queue.pop();
    queue.push(...(children.get(pid) ?? []));
    if (comm.get(pid) !== "workerd") continue;
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    procs++;
    rss += Number(kb ?? 0) * 1024;
  }
  return { procs, rssMB: mb(rss) };
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
  return { human, key };
}

async function listPending(human) {
  const all = [];
  let cursor = null;
  do {
    const q = `state=pending&scope=mine&limit=200${cursor ? `&cursor=${cursor}` : ""}`;
    const page = await (await human(`/v1/approvals?${q}`)).json();
    all.push(...page.approvals);
    cursor = page.cursor;
  } while (cursor);
  return all;
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

const worker = await startLocalWorker();
const report = { n: N, sessions: M };
let failures = 0;
const failed = () => {
  failures++;
  return null;
};
try {
  const { human, key } = await signUp(worker.url);
  const gate = new Tapgate({ url: worker.url, apiKey: key, onLog });
  const run = Date.now().toString(36);

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

  progress("concurrent", `${N} sessions, all decided at once`);
  const conc = await openSessions(gate, `bench-${run}-conc`, N);
  const concAsks = conc.map((s) => ask(s, "c0"));
  const concVisible = await waitVisible(human, concAsks);
  const concMs = await Promise.all(concAsks.map((a) => decide(a, concVisible)));
  report.concurrent = stats(concMs.filter((ms) => ms !== null));
  for (const s of conc) s.close();

  progress("floors", `${PINGS} WebSocket pings and HTTP health checks`);
  const pings = [];
  const http = [];
  for (let i = -20; i < PINGS; i++) {
    const ms = await seqSession.ping();
    if (i >= 0) pings.push(ms);
  }
  for (let i = -20; i < PINGS; i++) {
    const t0 = performance.now();
    await (await fetch(`${worker.url}/v1/health`)).arrayBuffer();
    if (i >= 0) http.push(performance.now() - t0);
  }
  report.wsPing = stats(pings);
  report.httpFloor = stats(http);
  const floor = report.httpFloor.p50 + report.wsPing.p50;
  report.ratioSequential = report.sequential.p50 / floor;
  report.ratioConcurrent = report.concurrent.p50 / floor;

  progress("capacity", `${M} sessions, one pending request each`);
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
  report.failures = failures;
  progress("close", "closing the sessions and stopping the Worker");
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
  console.log(`${"latency (ms)".padEnd(32)}${"n".padStart(6)}${"p50".padStart(8)}${"p99".padStart(8)}`);
  row("decision -> agent, sequential", report.sequential);
  row("decision POST -> its response", report.decisionResponse);
  row("decision -> agent, concurrent", report.concurrent);
  row("WebSocket ping -> pong", report.wsPing);
  row("HTTP GET /v1/health", report.httpFloor);
  console.log(
    `decision p50 / (http p50 + ping p50): sequential ${report.ratioSequential.toFixed(2)}, concurrent ${report.ratioConcurrent.toFixed(2)} (target <= 2)`,
  );
  console.log(`capacity: ${c.pendingVisible}/${M} pending visible, ${c.stillOpen}/${c.opened} sessions open`);
  console.log(
    `memory (RSS MB): workerd x${c.workerdProcs} ${c.workerdRssMB.before} -> ${c.workerdRssMB.after}, node client ${c.nodeRssMB.before} -> ${c.nodeRssMB.after}`,
  );
  console.log(`failed decisions: ${report.failures}`);
  for (const [what, n] of Object.entries(sdkWarnings)) console.log(`SDK warning x${n} during ${what}`);
}
