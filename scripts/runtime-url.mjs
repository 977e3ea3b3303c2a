/**
 * Where the Worker's own runtime listens under wrangler's local dev server, for the benchmark.
 *
 * wrangler runs two workerd processes: the Worker's runtime, and in front of it a dev
 * proxy whose one JavaScript Durable Object (wrangler's ProxyWorker) relays every request and
 * every WebSocket frame of every client. Production has no such relay, and under a storm of
 * sockets it is what saturates first, so the benchmark measures both ways. wrangler does not
 * print the runtime's address; Linux's /proc tells which workerd under wrangler listens where.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** pid -> [child pids], and pid -> command name, of every process now. */
function processTable() {
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
  return { children, comm };
}

/** The workerd processes under `rootPid`. */
export function workerdUnder(rootPid) {
  const { children, comm } = processTable();
  const found = [];
  for (const queue = [rootPid]; queue.length; ) {
    const pid = queue.pop();
    queue.push(...(children.get(pid) ?? []));
    if (comm.get(pid) === "workerd") found.push(pid);
  }
  return found;
}

/** The loopback TCP ports `pid` listens on. */
function listeningPorts(pid) {
  const inodes = new Set();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {}
  }
  const ports = [];
  for (const line of readFileSync(`/proc/${pid}/net/tcp`, "utf8").split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    // local address, state 0A (LISTEN), inode
    if (f.length > 9 && f[3] === "0A" && inodes.has(f[9])) ports.push(Number.parseInt(f[1].split(":")[1], 16));
  }
  return ports;
}

/**
 * The URL of the Worker's runtime behind the dev proxy at `publicUrl`: the port of another
 * workerd under `wranglerPid` that answers `/v1/health` as the Worker does.
 */
export async function runtimeUrl(wranglerPid, publicUrl) {
  const publicPort = Number(new URL(publicUrl).port);
  for (const pid of workerdUnder(wranglerPid)) {
    const ports = listeningPorts(pid);
    if (ports.includes(publicPort)) continue; // the dev proxy
    for (const port of ports) {
      const url = `http://127.0.0.1:${port}`;
      const health = await fetch(`${url}/v1/health`, { signal: AbortSignal.timeout(5_000) })
        .then((r) => (r.ok ? r.json() : null))
        .catch(() => null);
      if (health?.ok === true) return url;
    }
  }
  throw new Error("the Worker's runtime was not found under wrangler dev");
}
