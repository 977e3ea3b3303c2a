/**
 * The benchmark's clients, as a user's would be: the human (signed up through the dev outbox,
 * then cookie requests), a dashboard's live feed, and agents' sessions and requests through the
 * built SDK. Reads that are safe to repeat are retried when the runtime reset their pooled
 * connection, outside any measured interval (and counted).
 *
 * Owns: those clients. Does not own: the phases and their timing (bench.mjs).
 */
import WebSocket from "ws";

/** Sessions opened at once, so that a 1000-session run does not trip the SDK's connect timeout. */
export const OPEN_PARALLEL = 50;

/** The human side, as test/sdk/helpers.ts does it: sign up through the dev outbox, then cookie requests. */
export async function signUp(url) {
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
export function openLiveFeed(url, cookie) {
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
/** How many reads `retried` ran again so far. */
export const resetsRetried = () => resets;

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
export async function waitVisible(human, asks, timeoutMs = 60_000) {
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

export function ask(session, toolCallId) {
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

export async function openSessions(gate, prefix, count) {
  const sessions = [];
  for (let i = 0; i < count; i += OPEN_PARALLEL) {
    const ids = Array.from({ length: Math.min(OPEN_PARALLEL, count - i) }, (_, j) => `${prefix}-${i + j}`);
    const opened = await Promise.allSettled(ids.map((id) => gate.session(id, { title: "bench" })));
    sessions.push(...opened.filter((r) => r.status === "fulfilled").map((r) => r.value));
  }
  return sessions;
}
