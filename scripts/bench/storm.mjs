/**
 * The benchmark's storm of dropped agent sockets, and the probes that time the service meanwhile.
 *
 * Owns: that phase. Does not own: opening the sessions or the clients (client.mjs).
 */
import { get as httpGet } from "node:http";

/**
 * The storm: drops every socket at once (each session closes; the SDK answers its request
 * fail-closed) and times until the live feed has shown every one of those requests resolved.
 * Meanwhile one probe at a time asks a trivial question (health) and a D1 listing, and another
 * the same listing over a new TCP connection each time; the slowest is reported. `trace`, when
 * given, is told of each probe as it returns.
 */
export async function storm({ sessions, asks, shown, live, human, target, cookie, trace }) {
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
        trace?.(`${path} ${res.status} in ${(performance.now() - t).toFixed(0)} ms`);
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
      trace?.(`${path} ${status} in ${(performance.now() - t).toFixed(0)} ms`);
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
