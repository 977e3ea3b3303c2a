/**
 * A fake PagerDuty Events API v2 on 127.0.0.1, for the workerd tests (started once by
 * vitest.config.ts; the Worker's `PAGERDUTY_EVENTS_URL` points here). It checks every event as
 * the real API does (`POST /v2/enqueue`, JSON, a known 32-character routing key, `event_action`,
 * a `dedup_key`, a trigger's `payload` with `summary` ≤ 1024, `source` and `severity`) and answers
 * 202 like it, or 400 with the reason.
 *
 * Tests drive it over HTTP: `POST /_fake/keys {routingKey, answers?: number[]}` registers a
 * service whose next events are answered with `answers` first (e.g. [500]: a failure, then 202s);
 * `GET /_fake/events?routingKey=…` lists the events it received for that key (with the status each got).
 */
import { createServer } from "node:http";

const ACTIONS = ["trigger", "acknowledge", "resolve"];
const SEVERITIES = ["critical", "error", "warning", "info"];

/** @param {unknown} e @returns {string | null} why the event is invalid, or null */
function invalid(e) {
  if (typeof e !== "object" || e === null) return "not an object";
  const event = /** @type {Record<string, any>} */ (e);
  if (typeof event.routing_key !== "string" || event.routing_key.length !== 32) return "routing_key";
  if (!ACTIONS.includes(event.event_action)) return "event_action";
  if (event.dedup_key !== undefined && (typeof event.dedup_key !== "string" || event.dedup_key.length > 255))
    return "dedup_key";
  if (event.event_action !== "trigger") return event.dedup_key === undefined ? "dedup_key is required" : null;
  const p = event.payload;
  if (typeof p !== "object" || p === null) return "payload";
  if (typeof p.summary !== "string" || p.summary.length === 0 || p.summary.length > 1024) return "payload.summary";
  if (typeof p.source !== "string" || p.source.length === 0) return "payload.source";
  if (!SEVERITIES.includes(p.severity)) return "payload.severity";
  if (p.custom_details !== undefined && (typeof p.custom_details !== "object" || p.custom_details === null))
    return "payload.custom_details";
  if (
    event.links !== undefined &&
    !(Array.isArray(event.links) && event.links.every((l) => typeof l?.href === "string"))
  )
    return "links";
  return null;
}

/** @returns {Promise<{ url: string }>} */
export function startFakePagerDuty() {
  /** @type {Map<string, { answers: number[], events: Array<{ status: number, body: unknown }> }>} */
  const services = new Map();
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      const reply = (status, body) => {
        res.writeHead(status, { "Content-Type": "application/json" });
        res.end(JSON.stringify(body));
      };
      let body;
      try {
        body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
      } catch {
        return reply(400, { status: "invalid event", message: "Event object is invalid", errors: ["not JSON"] });
      }
      if (req.method === "POST" && url.pathname === "/_fake/keys") {
        services.set(body.routingKey, { answers: body.answers ?? [], events: [] });
        return reply(200, { ok: true });
      }
      if (req.method === "GET" && url.pathname === "/_fake/events") {
        return reply(200, { events: services.get(url.searchParams.get("routingKey") ?? "")?.events ?? [] });
      }
      if (url.pathname !== "/v2/enqueue") return reply(404, { message: "not found" });
      if (req.method !== "POST") return reply(405, { message: "method not allowed" });
      if (!String(req.headers["content-type"]).startsWith("application/json"))
        return reply(400, { status: "invalid event", message: "Content-Type must be application/json" });
      const service = services.get(body?.routing_key);
      const why = invalid(body) ?? (service ? null : "routing_key: no such integration");
      if (why) {
        service?.events.push({ status: 400, body });
        return reply(400, { status: "invalid event", message: "Event object is invalid", errors: [why] });
      }
      const status = service.answers.shift() ?? 202;
      service.events.push({ status, body });
      if (status !== 202) return reply(status, { status: "error", message: "scripted failure" });
      return reply(202, { status: "success", message: "Event processed", dedup_key: body.dedup_key });
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      server.unref();
      const address = server.address();
      resolve({ url: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}` });
    });
  });
}
