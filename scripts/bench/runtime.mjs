/**
 * What the benchmark reads of the local runtime's processes rather than of its answers: the
 * Worker's bundle, the workerd processes' memory and CPU time (Linux's /proc), and when the
 * runtime has gone idle.
 *
 * Owns: those readings. Does not own: starting the runtime (local-worker.mjs) or finding its
 * processes (runtime-url.mjs).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../local-worker.mjs";
import { workerdUnder } from "../runtime-url.mjs";

export const mb = (bytes) => Math.round(bytes / 1024 / 1024);

/** The Worker's bundle as `wrangler deploy --dry-run` builds it (before the Worker starts, so it skews nothing). */
export function bundleSize() {
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
/** RSS of the workerd processes under the wrangler process. */
export function workerdRss(rootPid) {
  const pids = workerdUnder(rootPid);
  const kb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
  return { procs: pids.length, rssMB: mb(pids.reduce((sum, pid) => sum + kb(pid) * 1024, 0)) };
}

/**
 * CPU time (ms, user and system) the workerd processes under the wrangler process have used so
 * far: read before and after a phase, it tells a saturated runtime thread from one that waits.
 */
export function workerdCpuMs(rootPid) {
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
export async function runtimeIdle(rootPid, limitMs = 15_000) {
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
