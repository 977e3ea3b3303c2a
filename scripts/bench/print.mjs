/**
 * The benchmark's report as a reader sees it: the latency rows, every figure against its goal
 * (and, for times, against the floor measured in the same run), and the lines that frame them.
 *
 * Owns: that text. Does not own: the figures (bench.mjs measures them; `--json` prints them raw).
 */
import { OPEN_PARALLEL } from "./client.mjs";

/** Prints `report` (as bench.mjs builds it) to stdout. */
export function printReport(report) {
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
  row(`decision -> agent, ${report.inFlight} in flight`, report.concurrent);
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
      `decisions per second (${report.n} sessions, ${report.inFlight} in flight)`,
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
      `${report.sessions} sessions opened ${OPEN_PARALLEL} at a time, each holding a request`,
      `${c.opened} opened, ${c.pendingVisible} pending`,
      "",
      `${report.sessions}`,
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
  for (const [what, n] of Object.entries(report.sdkWarnings)) console.log(`SDK warning x${n} during ${what}`);
}
