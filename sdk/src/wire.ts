/**
 * The bytes on the wire: opening one agent socket (every way that can fail turned into an actionable
 * error) and encoding frames the gate will accept.
 */

import type { Socket } from "node:net";
import WebSocket from "ws";
import { LIMITS, parseJson, type RequestPermissionParams, tapgateMetaSchema } from "./protocol.js";

export type TapgateErrorCode =
  | "no_api_key"
  | "unauthorized"
  | "forbidden"
  | "unreachable"
  | "timeout"
  | "rejected"
  | "closed";

export class TapgateError extends Error {
  override readonly name = "TapgateError";
  constructor(
    readonly code: TapgateErrorCode,
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export interface ConnectConfig {
  sessionId: string;
  baseUrl: string;
  /** The `ws(s)://…/v1/agent/sessions/:id` address. */
  target: string;
  apiKey: string;
  connectTimeoutMs: number;
}

export type Connection = { ws: WebSocket; socket: Socket | undefined };
export type OptionRef = { optionId: string; kind: string };

const serverTimeoutMs = tapgateMetaSchema.shape.timeoutMs.unwrap();

/** Opens one socket and maps every failure to an actionable TapgateError; never waits past the timeout. */
export function connect(cfg: ConnectConfig, closer: AbortSignal): Promise<Connection> {
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
      const json = parseJson(body);
      const text = isRecord(json) ? (json.message ?? json.error) : undefined;
      resolve((typeof text === "string" && text ? text : body.trim()).slice(0, 300) || "no details");
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

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Merges into `_meta` so the agent's other keys survive, clamped to what the gate accepts. */
export function withTimeoutMeta(params: RequestPermissionParams, timeoutMs: number): RequestPermissionParams {
  const meta = isRecord(params._meta) ? params._meta : {};
  const tapgate = isRecord(meta.tapgate) ? meta.tapgate : {};
  const min = serverTimeoutMs.minValue ?? 1000;
  const clamped = Math.min(serverTimeoutMs.maxValue ?? Number.MAX_SAFE_INTEGER, Math.max(min, Math.ceil(timeoutMs)));
  return { ...params, _meta: { ...meta, tapgate: { ...tapgate, timeoutMs: clamped } } };
}

/** Tolerates invalid params, so even a request refused locally can select the reject it offered. */
export function agentOptionsOf(params: unknown): OptionRef[] {
  const options = isRecord(params) && Array.isArray(params.options) ? params.options : [];
  return options.filter(
    (o): o is OptionRef => isRecord(o) && typeof o.optionId === "string" && typeof o.kind === "string",
  );
}

/** The gate refuses oversized or over-deep frames; refusing them here keeps the socket (and other requests) alive. */
export function encodeFrame(message: Record<string, unknown>): string | { error: string } {
  let frame: string;
  try {
    frame = JSON.stringify(message);
  } catch {
    return { error: "params are not JSON-serializable" };
  }
  if (Buffer.byteLength(frame) > LIMITS.frameBytes) return { error: `frame exceeds ${LIMITS.frameBytes} bytes` };
  if (nestsDeeper(message, LIMITS.jsonDepth)) return { error: `JSON nests deeper than ${LIMITS.jsonDepth}` };
  return frame;
}

function nestsDeeper(value: unknown, remaining: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (remaining <= 0) return true;
  return Object.values(value).some((v) => nestsDeeper(v, remaining - 1));
}

/** Issue paths only: the input values a message could echo may be tool arguments. */
export function describeIssues(error: { issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey> }> }): string {
  const paths = error.issues.map((i) => i.path.map(String).join(".") || "(root)");
  return `invalid at ${[...new Set(paths)].slice(0, 5).join(", ")}`;
}

export function describeRpcError(error: Record<string, unknown>): string {
  return `${String(error.code)} ${typeof error.message === "string" ? error.message.slice(0, 200) : ""}`.trim();
}
