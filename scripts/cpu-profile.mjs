/**
 * A CPU profile of the Worker's isolate under `wrangler dev`, over the DevTools protocol, for
 * `npm run bench -- --profile`. Locally the Worker and both Durable Objects share that one
 * isolate and its one thread, so the profile names every JavaScript cost of a phase: the
 * routes, each SessionGate, the TeamHub, and the local D1's own work is outside it (SQLite in workerd).
 */
import WebSocket from "ws";

/** Starts sampling; `stop()` resolves to the heaviest functions by self time. */
export async function startCpuProfile(inspectorUrl) {
  const ws = new WebSocket(inspectorUrl);
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  let nextId = 1;
  const waiting = new Map();
  ws.on("message", (data) => {
    const msg = JSON.parse(String(data));
    waiting.get(msg.id)?.(msg.result);
    waiting.delete(msg.id);
  });
  const call = (method, params = {}) =>
    new Promise((resolve) => {
      const id = nextId++;
      waiting.set(id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
  await call("Profiler.enable");
  await call("Profiler.setSamplingInterval", { interval: 200 });
  await call("Profiler.start");
  return {
    async stop(top = 25) {
      const { profile } = await call("Profiler.stop");
      ws.close();
      return summarize(profile, top);
    },
  };
}

/** Self time per function (name, file:line), heaviest first, with the share of all samples. */
function summarize(profile, top) {
  const selfUs = new Map();
  const dt = profile.timeDeltas;
  const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
  let total = 0;
  profile.samples.forEach((nodeId, i) => {
    const n = byNode.get(nodeId);
    const f = n.callFrame;
    const file = f.url ? f.url.replace(/^.*\//, "") : "";
    const key = `${f.functionName || "(anonymous)"} ${file}${file ? `:${f.lineNumber + 1}` : ""}`;
    const us = dt[i] ?? 0;
    selfUs.set(key, (selfUs.get(key) ?? 0) + us);
    total += us;
  });
  const rows = [...selfUs].sort((a, b) => b[1] - a[1]).slice(0, top);
  return { totalMs: total / 1000, rows: rows.map(([fn, us]) => ({ fn, ms: us / 1000, share: us / total })) };
}
