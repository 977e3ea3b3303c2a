/**
 * One gate session's link to Tapgate: opening the agent WebSocket (every way that can fail turned
 * into an actionable `TapgateError`), the `_tapgate/hello` sent on each open, the heartbeat, raw
 * `ping`/`pong`, reconnecting with backoff, and whether the link may keep the process alive.
 *
 * Does not own: requests and their answers (`gate-session.ts` keeps them and is told, through
 * `ConnectionHooks`, when the link opens, drops or closes for good), nor what a frame means.
 */
import type { Socket } from "node:net";
import WebSocket, { type RawData } from "ws";
import { errorMessageOf } from "./errors.js";
import { rpcNotification } from "./jsonrpc.js";
import { HEARTBEAT_INTERVAL_MS, type HelloParams, LIMITS, METHODS, parseJson } from "./protocol.js";
import { TapgateError } from "./tapgate-error.js";

export type LogLevel = "debug" | "info" | "warn" | "error";
export type SessionState = "connecting" | "open" | "reconnecting" | "closed";
export type Logger = (level: LogLevel, message: string) => void;

export interface ConnectConfig {
  sessionId: string;
  baseUrl: string;
  /** The `ws(s)://…/v1/agent/sessions/:id` address. */
  target: string;
  apiKey: string;
  connectTimeoutMs: number;
}

export interface ConnectionConfig extends ConnectConfig {
  maxReconnectAttempts: number;
  /** The hello sent on each open (it may change between opens: a private team's leaves out `cwd`). */
  hello: () => HelloParams;
  log: Logger;
}

/** What the connection tells its session; called in the order the old single class did its work. */
export interface ConnectionHooks {
  /** The socket is open and the hello is sent: send what waited. */
  opened(): void;
  /** A text frame other than `pong`. */
  frame(text: string): void;
  /** The socket is gone (a reconnect may follow): answer what was in flight on it. */
  dropped(): void;
  /** Closed for good: answer everything still pending. */
  closed(): void;
  /** Whether someone is waiting on this session, so it must keep the process alive. */
  busy(): boolean;
}

type Opened = { ws: WebSocket; socket: Socket | undefined };

const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 10_000;

export class GateConnection {
  readonly #cfg: ConnectionConfig;
  readonly #hooks: ConnectionHooks;
  readonly #closer = new AbortController();
  /** Pongs carry no id; the gate answers in order, so they match pings first-in first-out. */
  #pings: Array<{ sentAt: number; resolve: (ms: number) => void; reject?: (err: Error) => void }> = [];
  #state: SessionState = "connecting";
  #ws: WebSocket | undefined;
  #socket: Socket | undefined;
  #connectedAt = 0;
  #attempts = 0;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;

  constructor(cfg: ConnectionConfig, hooks: ConnectionHooks) {
    this.#cfg = cfg;
    this.#hooks = hooks;
  }

  get state(): SessionState {
    return this.#state;
  }

  /** Whether the current socket is open right now (it may be closing before its close event). */
  get socketOpen(): boolean {
    return this.#ws?.readyState === WebSocket.OPEN;
  }

  async open(): Promise<void> {
    try {
      this.#attach(await connect(this.#cfg, this.#closer.signal));
    } catch (err) {
      this.close();
      throw err;
    }
  }

  send(frame: string): void {
    this.#ws?.send(frame);
  }

  /** Round trip of a raw `ping` → `pong`, in milliseconds. */
  ping(): Promise<number> {
    const ws = this.#ws;
    if (this.#state !== "open" || !ws) return Promise.reject(new TapgateError("closed", "not connected to Tapgate"));
    return new Promise((resolve, reject) => {
      this.#pings.push({ sentAt: performance.now(), resolve, reject });
      this.updateRef();
      ws.send("ping");
    });
  }

  /** Closes with 1000 and stops reconnecting; the session answers what is pending. */
  close(): void {
    if (this.#state === "closed") return;
    this.#state = "closed";
    this.#closer.abort();
    clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = undefined;
    const ws = this.#ws;
    this.#dropSocket();
    ws?.close(1000);
    this.#hooks.closed();
  }

  /** An idle session must not keep the process alive; one the agent is waiting on must. */
  updateRef(): void {
    const busy = this.#hooks.busy() || this.#pings.some((w) => w.reject);
    for (const handle of [this.#socket, this.#reconnectTimer]) {
      if (busy) handle?.ref();
      else handle?.unref();
    }
  }

  #attach({ ws, socket }: Opened): void {
    this.#ws = ws;
    this.#socket = socket;
    this.#state = "open";
    this.#connectedAt = Date.now();
    ws.on("message", (data, isBinary) => this.#onMessage(ws, data, isBinary));
    ws.on("close", (code) => this.#onSocketClose(ws, code));
    ws.on("error", (err) => this.#cfg.log("debug", `socket error: ${err.message}`));
    ws.send(JSON.stringify(rpcNotification(METHODS.hello, this.#cfg.hello())));
    this.#hooks.opened();
    this.#startHeartbeat(ws);
    this.updateRef();
  }

  #onMessage(ws: WebSocket, data: RawData, isBinary: boolean): void {
    if (ws !== this.#ws || isBinary) return;
    const text = data.toString();
    if (text === "pong") {
      const waiter = this.#pings.shift();
      waiter?.resolve(performance.now() - waiter.sentAt);
      this.updateRef();
      return;
    }
    this.#hooks.frame(text);
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
    this.#hooks.dropped();
    const pings = this.#pings;
    this.#pings = [];
    for (const w of pings) w.reject?.(new TapgateError("closed", "connection to Tapgate closed before pong"));
  }

  #scheduleReconnect(): void {
    if (this.#attempts >= this.#cfg.maxReconnectAttempts) {
      this.#cfg.log("error", `gave up reconnecting to ${this.#cfg.baseUrl} after ${this.#attempts} attempts`);
      this.close();
      return;
    }
    const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.#attempts);
    this.#attempts++;
    // Equal jitter spreads a fleet of agents after a deploy while still backing off.
    this.#reconnectTimer = setTimeout(() => void this.#reconnect(), base / 2 + (Math.random() * base) / 2);
    this.updateRef();
  }

  async #reconnect(): Promise<void> {
    this.#reconnectTimer = undefined;
    if (this.#closer.signal.aborted) return;
    try {
      const opened = await connect(this.#cfg, this.#closer.signal);
      if (this.#closer.signal.aborted) {
        opened.ws.close(1000);
        return;
      }
      this.#attach(opened);
      this.#cfg.log("info", `reconnected to ${this.#cfg.baseUrl}`);
    } catch (err) {
      if (this.#closer.signal.aborted) return;
      const revoked = err instanceof TapgateError && (err.code === "unauthorized" || err.code === "forbidden");
      this.#cfg.log(
        revoked ? "error" : "debug",
        `reconnect failed: ${err instanceof Error ? err.message : String(err)}`,
      );
      if (revoked) this.close();
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
}

/** Opens one socket and maps every failure to an actionable TapgateError; never waits past the timeout. */
function connect(cfg: ConnectConfig, closer: AbortSignal): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const headers = { Authorization: `Bearer ${cfg.apiKey}` };
    const ws = new WebSocket(cfg.target, { headers, perMessageDeflate: false, maxPayload: LIMITS.frameBytes });
    let socket: Socket | undefined;
    let done = false;
    const finish = (err?: TapgateError) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      closer.removeEventListener("abort", onClose);
      if (!err) return resolve({ ws, socket });
      ws.terminate();
      reject(err);
    };
    const onClose = () => finish(new TapgateError("closed", "session closed while connecting"));
    const timeout = `Tapgate at ${cfg.baseUrl} did not accept the connection within ${cfg.connectTimeoutMs} ms`;
    const timer = setTimeout(() => finish(new TapgateError("timeout", timeout)), cfg.connectTimeoutMs);
    closer.addEventListener("abort", onClose, { once: true });
    ws.on("error", (err) => finish(unreachable(cfg.baseUrl, err)));
    ws.once("upgrade", (res) => {
      socket = res.socket as Socket;
    });
    ws.once("open", () => finish());
    ws.once("unexpected-response", (_req, res) => {
      void readDetail(res).then((detail) => finish(httpError(res.statusCode ?? 0, detail, cfg)));
    });
    if (closer.aborted) onClose();
  });
}

function unreachable(baseUrl: string, err: Error): TapgateError {
  const hint = "check TAPGATE_URL and that the server is running";
  return new TapgateError("unreachable", `cannot reach Tapgate at ${baseUrl}: ${err.message} (${hint})`);
}

function httpError(status: number, detail: string, { baseUrl, sessionId }: ConnectConfig): TapgateError {
  if (status === 401) {
    const fix = "create a new key or run `tapgate login`";
    return new TapgateError("unauthorized", `Tapgate rejected the API key (401): ${detail} — ${fix}`, status);
  }
  if (status === 403) {
    const fix = "the session belongs to another user; use another session id or that user's key";
    return new TapgateError("forbidden", `Tapgate refused session "${sessionId}" (403): ${detail} — ${fix}`, status);
  }
  return new TapgateError(
    "rejected",
    `Tapgate at ${baseUrl} refused the connection (HTTP ${status}): ${detail}`,
    status,
  );
}

/** The gate explains refusals as `{error, message}`; a bounded read so a misbehaving proxy cannot stall us. */
function readDetail(res: NodeJS.ReadableStream): Promise<string> {
  return new Promise((resolve) => {
    let body = "";
    const end = () => {
      const text = errorMessageOf(parseJson(body));
      resolve((text ?? body.trim()).slice(0, 300) || "no details");
    };
    res.setEncoding("utf8");
    res.on("data", (chunk: string) => {
      body += chunk;
      if (body.length > 4096) end();
    });
    res.once("end", end);
    res.once("error", end);
    setTimeout(end, 2_000).unref();
  });
}

/** The WebSocket base of an http(s) or ws(s) Tapgate URL, without query, fragment or trailing slash. */
export function toWebSocketBase(url: string): string {
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  const protocol = parsed && { "http:": "ws:", "https:": "wss:", "ws:": "ws:", "wss:": "wss:" }[parsed.protocol];
  if (!parsed || !protocol)
    throw new TypeError(`invalid Tapgate URL ${JSON.stringify(url)}: use http(s)://host[:port]`);
  parsed.protocol = protocol;
  parsed.search = "";
  parsed.hash = "";
  return parsed.toString().replace(/\/+$/, "");
}
