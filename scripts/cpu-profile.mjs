/**
 * A CPU profile of the Worker's isolate on the local runtime (started with its inspector), over
 * the DevTools protocol, for `npm run bench -- --profile`. Locally the Worker and both Durable
 * Objects share that isolate and its one thread, so the profile names every JavaScript cost of a
 * phase: the routes, each SessionGate, the TeamHub, and the local D1's own work is outside it
 * (SQLite in workerd).
 */
import WebSocket from "ws";

/** Starts sampling; `stop()` resolves to the heaviest functions, by self and by total time. */
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

/**
 * Per function (name, file:line), heaviest first, with the share of all samples: self time, and
 * total time (the samples with the function anywhere on the stack, counted once each).
 */
function summarize(profile, top) {
  const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const nameOf = (n) => {
    const f = n.callFrame;
    const file = f.url ? f.url.replace(/^.*\//, "") : "";
    return `${f.functionName || "(anonymous)"} ${file}${file ? `:${f.lineNumber + 1}` : ""}`.trim();
  };
  const selfUs = new Map();
  const totalUs = new Map();
  let total = 0;
  profile.samples.forEach((nodeId, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    total += us;
    const leaf = nameOf(byNode.get(nodeId));
    selfUs.set(leaf, (selfUs.get(leaf) ?? 0) + us);
    const seen = new Set();
    for (let id = nodeId; id !== undefined; id = parent.get(id)) {
      const name = nameOf(byNode.get(id));
      if (seen.has(name)) continue;
      seen.add(name);
      totalUs.set(name, (totalUs.get(name) ?? 0) + us);
    }
  });
  const rows = (m) =>
    [...m]
      .filter(([fn]) => fn !== "(root)")
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([fn, us]) => ({ fn, ms: us / 1000, share: us / total }));
  return { totalMs: total / 1000, self: rows(selfUs), total: rows(totalUs) };
}
