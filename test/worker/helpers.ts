/** Test helpers: real sign-up through the dev outbox, real API keys, real agent WebSockets. */
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import type { RequestPermissionParams } from "../../sdk/src/protocol";
import type { TeamHub } from "../../worker/hub/team-hub";
import { ORIGIN } from "./origin";

export { ORIGIN };

let counter = 0;
export const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++counter}`;

let clients = 0;
/**
 * A fresh client address (10.0.0.0/8) for each request that names none, as Cloudflare would set
 * `CF-Connecting-IP`: per-client rate limits bite only where a test sends one address on purpose.
 */
const newClient = () => `10.${(++clients >> 16) & 255}.${(clients >> 8) & 255}.${clients & 255}`;

export function api(path: string, init: RequestInit & { cookie?: string } = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (!headers.has("CF-Connecting-IP")) headers.set("CF-Connecting-IP", newClient());
  if (init.cookie) headers.set("Cookie", init.cookie);
  if (init.body !== undefined && !headers.has("Content-Type")) headers.set("Content-Type", "application/json");
  if (init.method && init.method !== "GET" && !headers.has("Origin")) headers.set("Origin", ORIGIN);
  return SELF.fetch(`${ORIGIN}${path}`, { ...init, headers });
}

export async function json<T = Record<string, unknown>>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

/** The dev outbox, read as `npm start`'s own machine reads it: a loopback client on a loopback host. */
export function outbox(to?: string): Promise<Response> {
  const query = to === undefined ? "" : `?to=${encodeURIComponent(to)}`;
  return SELF.fetch(`http://localhost:8787/v1/dev/outbox${query}`, { headers: { "CF-Connecting-IP": "127.0.0.1" } });
}

export async function lastMailLink(email: string): Promise<string> {
  const { messages } = await json<{ messages: Array<{ link: string }> }>(await outbox(email));
  const link = messages.at(-1)?.link;
  if (!link) throw new Error(`no mail for ${email}`);
  return link;
}

export function tokenOf(link: string): string {
  return new URL(link).searchParams.get("token") ?? "";
}

export async function confirmLink(link: string): Promise<Response> {
  return api("/v1/auth/link", { method: "POST", body: JSON.stringify({ token: tokenOf(link) }) });
}

/** `POST /v1/invites/preview`: the invite's token in the body (never a URL, which logs keep). */
export function previewInvite(token: string): Promise<Response> {
  return api("/v1/invites/preview", { method: "POST", body: JSON.stringify({ token }) });
}

export function cookieOf(response: Response): string {
  const setCookie = response.headers.get("Set-Cookie") ?? "";
  return setCookie.split(";")[0] ?? "";
}

export interface Member {
  cookie: string;
  email: string;
  userId: string;
  teamId: string;
}

/** Signs up a new user with a new team, the way a person would: sign-up, mail, confirm. */
export async function signUp(name = "Ada"): Promise<Member> {
  const email = `${unique(name.toLowerCase())}@example.com`;
  const signup = await api("/v1/auth/signup", {
    method: "POST",
    body: JSON.stringify({ email, name, team: `${name}'s team` }),
  });
  if (signup.status !== 202) throw new Error(`signup answered ${signup.status}`);
  const confirmed = await confirmLink(await lastMailLink(email));
  if (confirmed.status !== 200) throw new Error(`confirm answered ${confirmed.status}`);
  const cookie = cookieOf(confirmed);
  const me = await json<{ user: { id: string }; team: { id: string } }>(await api("/v1/me", { cookie }));
  return { cookie, email, userId: me.user.id, teamId: me.team.id };
}

export async function createKey(member: Member, label = "laptop"): Promise<{ id: string; key: string }> {
  const response = await api("/v1/keys", { method: "POST", cookie: member.cookie, body: JSON.stringify({ label }) });
  if (response.status !== 201) throw new Error(`key create answered ${response.status}`);
  return json(response);
}

/** An agent connection with an inbox: `next()` waits for the next frame the gate sends. */
export class AgentSocket {
  private inbox: unknown[] = [];
  private waiters: Array<(m: unknown) => void> = [];
  private barriers = new Map<unknown, () => void>();
  /** `_tapgate/progress` notifications, kept apart from the inbox: answers are what `next` waits for. */
  readonly progress: Array<Record<string, unknown>> = [];
  private progressWaiters: Array<() => void> = [];
  closed: Promise<CloseEvent>;

  constructor(readonly ws: WebSocket) {
    ws.accept();
    ws.addEventListener("message", (e) => {
      const data = typeof e.data === "string" ? (e.data === "pong" ? e.data : JSON.parse(e.data)) : e.data;
      const ours = Array.isArray(data) && data.some((frame) => this.barriers.has(frame?.id));
      for (const frame of ours ? data : [data]) this.receive(frame);
    });
    this.closed = new Promise((resolve) => ws.addEventListener("close", resolve));
  }

  /** Sends one raw text frame. Keep one frame in flight at a time: see `send`. */
  sendRaw(text: string | Uint8Array): void {
    this.ws.send(text);
  }

  /**
   * Sends a JSON-RPC message and resolves once the gate has handled it. The test harness wraps
   * Durable Objects in a proxy that can hand rapid frames over out of order (production and
   * `wrangler dev` keep order), so the message rides in a batch with a trailing `_tapgate/hello`
   * request: a batch is handled in order, and the hello's reply marks the end.
   */
  send(message: object): Promise<void> {
    const id = `barrier-${++counter}`;
    const handled = new Promise<void>((resolve) => this.barriers.set(id, resolve));
    this.ws.send(JSON.stringify([message, { jsonrpc: "2.0", id, method: "_tapgate/hello", params: {} }]));
    return handled;
  }

  private receive(frame: { id?: unknown; method?: unknown; params?: unknown }): void {
    if (frame?.method === "_tapgate/progress") {
      this.progress.push(frame.params as Record<string, unknown>);
      for (const wake of this.progressWaiters.splice(0)) wake();
      return;
    }
    const barrier = this.barriers.get(frame?.id);
    if (barrier) {
      this.barriers.delete(frame.id);
      barrier();
      return;
    }
    const waiter = this.waiters.shift();
    if (waiter) waiter(frame);
    else this.inbox.push(frame);
  }

  next<T = Record<string, unknown>>(): Promise<T> {
    if (this.inbox.length > 0) return Promise.resolve(this.inbox.shift() as T);
    return new Promise((resolve) => this.waiters.push(resolve as (m: unknown) => void));
  }

  /** Asks permission over the socket; resolves once the gate holds (or refused) the request. */
  ask(id: string | number, params: object): Promise<void> {
    return this.send({ jsonrpc: "2.0", id, method: "session/request_permission", params });
  }

  /** The gate answers in order, so once this reply arrives, every earlier answer has arrived. */
  barrier(): Promise<void> {
    return this.send({ jsonrpc: "2.0", method: "_tapgate/hello", params: {} });
  }

  pending(): number {
    return this.inbox.length;
  }

  /** The first progress notification (received or still to come) that matches. */
  async nextProgress(match: (p: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
    for (;;) {
      const found = this.progress.find(match);
      if (found) return found;
      await new Promise<void>((resolve) => this.progressWaiters.push(resolve));
    }
  }
}

export async function connectAgent(key: string, sessionId: string): Promise<AgentSocket> {
  const response = await SELF.fetch(`${ORIGIN}/v1/agent/sessions/${sessionId}`, {
    headers: { Upgrade: "websocket", Authorization: `Bearer ${key}` },
  });
  if (!response.webSocket) throw new Error(`upgrade answered ${response.status}: ${await response.text()}`);
  return new AgentSocket(response.webSocket);
}

export function permissionParams(sessionId: string, overrides: Partial<RequestPermissionParams> = {}) {
  return {
    sessionId,
    toolCall: {
      toolCallId: unique("call"),
      // Not high-risk under the default policy (that is `rm -rf *`): an allow needs no step-up.
      title: "rm -r build",
      kind: "execute",
      rawInput: { command: "rm -r build" },
    },
    options: [
      { optionId: "allow", name: "Allow once", kind: "allow_once" },
      { optionId: "always", name: "Always allow", kind: "allow_always" },
      { optionId: "deny", name: "Deny", kind: "reject_once" },
    ],
    ...overrides,
  };
}

export function gateStub(teamId: string, sessionId: string) {
  return env.SESSION_GATE.get(env.SESSION_GATE.idFromName(`${teamId}/${sessionId}`));
}

/** The team's hub, typed for `runInDurableObject`. */
export function hubStub(teamId: string) {
  return env.TEAM_HUB.get(env.TEAM_HUB.idFromName(teamId)) as unknown as DurableObjectStub<TeamHub>;
}

/** Whether the team's hub shows session `sessionId` connected (null: it has no row for it). */
export function hubShowsConnected(teamId: string, sessionId: string): Promise<boolean | null> {
  return runInDurableObject(hubStub(teamId), (_hub, state) => {
    const row = state.storage.sql.exec("SELECT connected FROM sessions WHERE session_id = ?", sessionId).toArray()[0];
    return row ? row.connected === 1 : null;
  });
}

/** Hands the gate's outbox to D1 now, so the index can be read without waiting. */
export async function flush(teamId: string, sessionId: string): Promise<void> {
  await runInDurableObject(gateStub(teamId, sessionId), (gate) => gate.flushOutbox());
}

export async function pendingApprovals(member: Member, sessionId: string): Promise<Approval[]> {
  await flush(member.teamId, sessionId);
  const { approvals } = await json<{ approvals: Approval[] }>(
    await api("/v1/approvals?state=pending", { cookie: member.cookie }),
  );
  return approvals.filter((a) => a.sessionId === sessionId);
}

/** Waits until the gate has resolved an approval (after events the test cannot await, like a close). */
export async function settled(member: Member, approvalId: string): Promise<Approval> {
  return vi.waitFor(
    async () => {
      const approval = await json<Approval>(await api(`/v1/approvals/${approvalId}`, { cookie: member.cookie }));
      if (approval.state === "pending") throw new Error("still pending");
      return approval;
    },
    { timeout: 5_000, interval: 10 },
  );
}

export function decide(member: Member, approval: Approval, optionId: string, requestHash = approval.requestHash) {
  return api(`/v1/approvals/${approval.id}/decision`, {
    method: "POST",
    cookie: member.cookie,
    body: JSON.stringify({ optionId, requestHash }),
  });
}

/** A signed-up member with a key, an open agent session and one pending request. */
export async function askOnce(member?: Member) {
  const owner = member ?? (await signUp());
  const { key, id: keyId } = await createKey(owner);
  const sessionId = unique("sess");
  const agent = await connectAgent(key, sessionId);
  const params = permissionParams(sessionId);
  await agent.ask(1, params);
  const [approval] = await pendingApprovals(owner, sessionId);
  if (!approval) throw new Error("the request did not become a pending approval");
  return { owner, key, keyId, sessionId, agent, params, approval };
}
