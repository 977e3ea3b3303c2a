/**
 * The Tapgate agent SDK: relays ACP `session/request_permission` to the gate over one WebSocket per
 * session, and answers the agent fail-closed on every path that is not a human decision.
 */
import type { Socket } from "node:net";
import { hostname } from "node:os";
import WebSocket, { type RawData } from "ws";
import {
  CANCELLED_ANSWER,
  failClosedAnswer,
  HEARTBEAT_INTERVAL_MS,
  type HelloParams,
  helloParamsSchema,
  METHODS,
  parseJson,
  type RequestPermissionParams,
  type RequestPermissionResponse,
  requestPermissionParamsSchema,
  requestPermissionResponseSchema,
  type SessionUpdateParams,
  sessionIdSchema,
  sessionUpdateParamsSchema,
} from "./protocol.js";
import {
  agentOptionsOf,
  type ConnectConfig,
  type Connection,
  connect,
  describeIssues,
  describeRpcError,
  encodeFrame,
  isRecord,
  type OptionRef,
  TapgateError,
  toWebSocketBase,
  withTimeoutMeta,
} from "./wire.js";

export { TapgateError, type TapgateErrorCode } from "./wire.js";
export type LogLevel = "debug" | "info" | "warn" | "error";
export type SessionState = "connecting" | "open" | "reconnecting" | "closed";

export interface TapgateOptions {
  /** Default: env `TAPGATE_URL`, else `http://localhost:8787`. */
  url?: string;
  /** Default: env `TAPGATE_API_KEY`. */
  apiKey?: string;
  /** Default 10 000. */
  connectTimeoutMs?: number;
  /** Consecutive failed reconnects after which a session closes for good. Default 20 (about two minutes). */
  maxReconnectAttempts?: number;
  /** Never receives tool arguments or the API key. Default: warnings and errors to `console.warn`. */
  onLog?: (level: LogLevel, message: string) => void;
}

export interface SessionMeta {
  title?: string;
  agent?: { name: string; version?: string };
  /** Default `os.hostname()`. */
  host?: string;
  /** Default `process.cwd()`. */
  cwd?: string;
}

export interface RequestPermissionOptions {
  signal?: AbortSignal;
  /** Expire sooner than the team's request lifetime (the gate takes at least 1 s). */
  timeoutMs?: number;
}

const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 10_000;
/** The gate's own expiry should answer first; this margin only covers a gate that never answers. */
const LOCAL_TIMEOUT_GRACE_MS = 2_000;
const MAX_TIMER_MS = 2 ** 31 - 1;

type Logger = (level: LogLevel, message: string) => void;

interface Pending {
  frame: string;
  options: OptionRef[];
  /** Set once written to a socket: from then on, losing that socket answers the request. */
  sent: boolean;
  resolve: (answer: RequestPermissionResponse) => void;
  dispose: () => void;
}

interface SessionConfig extends ConnectConfig {
  maxReconnectAttempts: number;
  hello: HelloParams;
  log: Logger;
  onClosed: (session: GateSession) => void;
}

export class Tapgate {
  readonly url: string;
  readonly #apiKey: string | undefined;
  readonly #options: TapgateOptions;
  readonly #sessions = new Set<GateSession>();

  constructor(options: TapgateOptions = {}) {
    this.url = options.url ?? process.env.TAPGATE_URL ?? "http://localhost:8787";
    toWebSocketBase(this.url); // a bad URL should fail here, not on the first session
    this.#apiKey = options.apiKey || process.env.TAPGATE_API_KEY || undefined;
    this.#options = options;
  }

  /** Opens (or rejoins) a gate session; resolves once its socket is open. */
  async session(sessionId: string, meta: SessionMeta = {}): Promise<GateSession> {
    if (!sessionIdSchema.safeParse(sessionId).success) {
      throw new TypeError(
        `invalid session id ${JSON.stringify(String(sessionId).slice(0, 140))}: use 1-128 of [A-Za-z0-9._:-]`,
      );
    }
    if (!this.#apiKey) throw new TapgateError("no_api_key", "no API key: set TAPGATE_API_KEY or run `tapgate login`");
    const session = new GateSession(sessionId, {
      sessionId,
      baseUrl: this.url,
      target: `${toWebSocketBase(this.url)}/v1/agent/sessions/${encodeURIComponent(sessionId)}`,
      apiKey: this.#apiKey,
      connectTimeoutMs: this.#options.connectTimeoutMs ?? 10_000,
      maxReconnectAttempts: this.#options.maxReconnectAttempts ?? 20,
      hello: buildHello(meta),
      log: this.#options.onLog ?? defaultLog,
      onClosed: (s) => this.#sessions.delete(s),
    });
    this.#sessions.add(session); // so that gate.close() also aborts a session still connecting
    await session.open();
    return session;
  }

  close(): void {
    for (const session of [...this.#sessions]) session.close();
  }
}

export class GateSession {
  readonly id: string;
  readonly #cfg: SessionConfig;
  readonly #closer = new AbortController();
  readonly #pending = new Map<number, Pending>();
  /** Pongs carry no id; the gate answers in order, so they match pings first-in first-out. */
  #pings: Array<{ sentAt: number; resolve: (ms: number) => void; reject?: (err: Error) => void }> = [];
  #state: SessionState = "connecting";
  #ws: WebSocket | undefined;
  #socket: Socket | undefined;
  #connectedAt = 0;
  #nextId = 1;
  #attempts = 0;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;

  /** @internal Use `Tapgate.session()`. */
  constructor(id: string, cfg: SessionConfig) {
    this.id = id;
    this.#cfg = cfg;
  }

  get state(): SessionState {
    return this.#state;
  }

  /** @internal */
  async open(): Promise<void> {
    try {
      this.#attach(await connect(this.#cfg, this.#closer.signal));
    } catch (err) {
      this.#shutdown();
      throw err;
    }
  }

  /** Best-effort: dropped while disconnected; invalid or foreign-session params are dropped with a warning. */
  update(params: SessionUpdateParams): void {
    const parsed = sessionUpdateParamsSchema.safeParse(params);
    const frame = encodeFrame({ jsonrpc: "2.0", method: METHODS.sessionUpdate, params });
    let problem = parsed.success ? undefined : describeIssues(parsed.error);
    if (!problem && params.sessionId !== this.id) problem = "sessionId is not this session's";
    if (!problem && typeof frame !== "string") problem = frame.error;
    if (problem) this.#cfg.log("warn", `session/update dropped: ${problem}`);
    else if (this.#state === "open" && typeof frame === "string") this.#ws?.send(frame);
  }

  /** Never rejects: every failure resolves to `failClosedAnswer(params.options)`. */
  requestPermission(
    params: RequestPermissionParams,
    opts: RequestPermissionOptions = {},
  ): Promise<RequestPermissionResponse> {
    if (opts.signal?.aborted) return Promise.resolve(CANCELLED_ANSWER);
    const options = agentOptionsOf(params);
    const denied = failClosedAnswer(options);
    const id = this.#nextId++;
    const frame = this.#encodeRequest(id, params, opts.timeoutMs);
    if (typeof frame !== "string") {
      this.#cfg.log("warn", `request_permission answered without asking: ${frame.error}`);
      return Promise.resolve(denied);
    }
    return new Promise((resolve) => {
      this.#track(id, { frame, options, sent: false, resolve, dispose: () => {} }, denied, opts);
    });
  }

  /** Round trip of a raw `ping` → `pong`, in milliseconds. */
  ping(): Promise<number> {
    const ws = this.#ws;
    if (this.#state !== "open" || !ws) return Promise.reject(new TapgateError("closed", "not connected to Tapgate"));
    return new Promise((resolve, reject) => {
      this.#pings.push({ sentAt: performance.now(), resolve, reject });
      this.#updateRef();
      ws.send("ping");
    });
  }

  /** Closes with 1000, stops reconnecting, and answers everything still pending fail-closed. */
  close(): void {
    this.#shutdown();
  }

  #encodeRequest(
    id: number,
    params: RequestPermissionParams,
    timeoutMs: number | undefined,
  ): string | { error: string } {
    const parsed = requestPermissionParamsSchema.safeParse(params);
    if (!parsed.success) return { error: `invalid params (${describeIssues(parsed.error)})` };
    if (params.sessionId !== this.id) return { error: "params.sessionId is not this session's" };
    if (this.#state === "closed") return { error: "the session is closed" };
    if (timeoutMs === undefined) return encodeFrame({ jsonrpc: "2.0", id, method: METHODS.requestPermission, params });
    if (!(timeoutMs > 0 && Number.isFinite(timeoutMs))) return { error: "timeoutMs must be a positive number" };
    const withTimeout = withTimeoutMeta(params, timeoutMs);
    return encodeFrame({ jsonrpc: "2.0", id, method: METHODS.requestPermission, params: withTimeout });
  }

  #track(
    id: number,
    p: Pending,
    denied: RequestPermissionResponse,
    { signal, timeoutMs }: RequestPermissionOptions,
  ): void {
    const onAbort = () => this.#abandon(id, CANCELLED_ANSWER);
    const localMs = Math.min((timeoutMs ?? 0) + LOCAL_TIMEOUT_GRACE_MS, MAX_TIMER_MS);
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => this.#abandon(id, denied), localMs);
    signal?.addEventListener("abort", onAbort, { once: true });
    p.dispose = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    };
    this.#pending.set(id, p);
    this.#updateRef();
    if (this.#state === "open") this.#send(p);
  }

  #send(p: Pending): void {
    this.#ws?.send(p.frame);
    p.sent = true;
  }

  #settle(id: number, answer: RequestPermissionResponse): void {
    const p = this.#pending.get(id);
    if (!p) return;
    this.#pending.delete(id);
    p.dispose();
    p.resolve(answer);
    this.#updateRef();
  }

  /** Cancel is symmetric: the gate must close the cards of a request the agent stopped waiting for. */
  #abandon(id: number, answer: RequestPermissionResponse): void {
    const p = this.#pending.get(id);
    if (!p) return;
    this.#settle(id, answer);
    const ws = this.#ws;
    if (!p.sent || ws?.readyState !== WebSocket.OPEN) return;
    ws.send(JSON.stringify({ jsonrpc: "2.0", method: METHODS.cancelRequest, params: { requestId: id } }));
  }

  #attach({ ws, socket }: Connection): void {
    this.#ws = ws;
    this.#socket = socket;
    this.#state = "open";
    this.#connectedAt = Date.now();
    ws.on("message", (data, isBinary) => this.#onMessage(ws, data, isBinary));
    ws.on("close", (code) => this.#onSocketClose(ws, code));
    ws.on("error", (err) => this.#cfg.log("debug", `socket error: ${err.message}`));
    ws.send(JSON.stringify({ jsonrpc: "2.0", method: METHODS.hello, params: this.#cfg.hello }));
    for (const p of this.#pending.values()) if (!p.sent) this.#send(p);
    this.#startHeartbeat(ws);
    this.#updateRef();
  }

  #onMessage(ws: WebSocket, data: RawData, isBinary: boolean): void {
    if (ws !== this.#ws || isBinary) return;
    const text = data.toString();
    if (text === "pong") {
      const waiter = this.#pings.shift();
      waiter?.resolve(performance.now() - waiter.sentAt);
      this.#updateRef();
      return;
    }
    const msg = parseJson(text);
    if (!isRecord(msg) || !("id" in msg)) {
      if (msg === undefined) this.#cfg.log("warn", "ignored an unparsable frame from Tapgate");
      return;
    }
    const p = typeof msg.id === "number" ? this.#pending.get(msg.id) : undefined;
    if (p?.sent && typeof msg.id === "number") this.#settle(msg.id, this.#answerFrom(msg, p));
    else if (isRecord(msg.error)) this.#cfg.log("warn", `Tapgate error ${describeRpcError(msg.error)}`);
  }

  #answerFrom(msg: Record<string, unknown>, p: Pending): RequestPermissionResponse {
    const parsed = requestPermissionResponseSchema.safeParse(msg.result);
    const answer = parsed.success && !("error" in msg) ? parsed.data : undefined;
    const outcome = answer?.outcome;
    // The service's answer goes to the caller as sent, `_meta` (who decided, why) included.
    if (answer?.outcome.outcome === "cancelled") return answer;
    if (answer && outcome?.outcome === "selected" && p.options.some((o) => o.optionId === outcome.optionId)) {
      return answer;
    }
    const why = isRecord(msg.error) ? describeRpcError(msg.error) : outcome ? "unoffered option" : "malformed result";
    this.#cfg.log("warn", `request_permission failed closed: ${why}`);
    return failClosedAnswer(p.options);
  }

  #onSocketClose(ws: WebSocket, code: number): void {
    if (ws !== this.#ws) return;
    this.#dropSocket();
    if (this.#state === "closed") return;
    this.#cfg.log("warn", `connection to Tapgate lost (code ${code}); reconnecting`);
    this.#state = "reconnecting";
    // Only a connection that lived a while resets the backoff, so a gate that accepts and drops does not spin.
    if (Date.now() - this.#connectedAt > BACKOFF_MAX_MS) this.#attempts = 0;
    this.#scheduleReconnect();
  }

  /** In-flight requests are answered, never re-sent: the gate may already have shown or resolved them. */
  #dropSocket(): void {
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
    this.#ws = undefined;
    this.#socket = undefined;
    for (const [id, p] of this.#pending) if (p.sent) this.#settle(id, failClosedAnswer(p.options));
    const pings = this.#pings;
    this.#pings = [];
    for (const w of pings) w.reject?.(new TapgateError("closed", "connection to Tapgate closed before pong"));
  }

  #scheduleReconnect(): void {
    if (this.#attempts >= this.#cfg.maxReconnectAttempts) {
      this.#cfg.log("error", `gave up reconnecting to ${this.#cfg.baseUrl} after ${this.#attempts} attempts`);
      this.#shutdown();
      return;
    }
    const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.#attempts);
    this.#attempts++;
    // Equal jitter spreads a fleet of agents after a deploy while still backing off.
    this.#reconnectTimer = setTimeout(() => void this.#reconnect(), base / 2 + (Math.random() * base) / 2);
    this.#updateRef();
  }

  async #reconnect(): Promise<void> {
    this.#reconnectTimer = undefined;
    if (this.#closer.signal.aborted) return;
    try {
      const conn = await connect(this.#cfg, this.#closer.signal);
      if (this.#closer.signal.aborted) {
        conn.ws.close(1000);
        return;
      }
      this.#attach(conn);
      this.#cfg.log("info", `reconnected to ${this.#cfg.baseUrl}`);
    } catch (err) {
      if (this.#closer.signal.aborted) return;
      const revoked = err instanceof TapgateError && (err.code === "unauthorized" || err.code === "forbidden");
      this.#cfg.log(
        revoked ? "error" : "debug",
        `reconnect failed: ${err instanceof Error ? err.message : String(err)}`,
      );
      if (revoked) this.#shutdown();
      else this.#scheduleReconnect();
    }
  }

  #startHeartbeat(ws: WebSocket): void {
    let awaitingPong = false;
    this.#heartbeat = setInterval(() => {
      if (awaitingPong) {
        this.#cfg.log("warn", "no pong from Tapgate within a heartbeat; dropping the connection");
        ws.terminate(); // the close event fails in-flight requests closed and reconnects
        return;
      }
      awaitingPong = true;
      const resolve = () => {
        awaitingPong = false;
      };
      this.#pings.push({ sentAt: performance.now(), resolve });
      ws.send("ping");
    }, HEARTBEAT_INTERVAL_MS).unref();
  }

  /** An idle session must not keep the process alive; one the agent is waiting on must. */
  #updateRef(): void {
    const busy = this.#pending.size > 0 || this.#pings.some((w) => w.reject);
    for (const handle of [this.#socket, this.#reconnectTimer]) {
      if (busy) handle?.ref();
      else handle?.unref();
    }
  }

  #shutdown(): void {
    if (this.#state === "closed") return;
    this.#state = "closed";
    this.#closer.abort();
    clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = undefined;
    const ws = this.#ws;
    this.#dropSocket();
    ws?.close(1000);
    for (const [id, p] of this.#pending) this.#settle(id, failClosedAnswer(p.options));
    this.#cfg.onClosed(this);
  }
}

function buildHello(meta: SessionMeta): HelloParams {
  const parsed = helloParamsSchema.safeParse({
    ...(meta.title === undefined ? {} : { title: meta.title.slice(0, 256) }),
    ...(meta.agent === undefined ? {} : { agent: meta.agent }),
    host: (meta.host ?? hostname()).slice(0, 256),
    cwd: (meta.cwd ?? process.cwd()).slice(0, 4096),
  });
  if (!parsed.success) throw new TypeError(`invalid session metadata: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

function defaultLog(level: LogLevel, message: string): void {
  if (level === "warn" || level === "error") console.warn(`[tapgate] ${message}`);
}
