/**
 * `GateSession`: one agent session's permission requests at Tapgate. Owns the requests in flight
 * (their JSON-RPC ids, local timeouts, abort signals), the frames that carry them, and the rule
 * that every path which is not a human decision answers fail-closed.
 *
 * Does not own the socket: `connection.ts` opens, heartbeats and reconnects it, and tells this
 * class when it opened, dropped or closed for good.
 */
import { type ConnectionConfig, GateConnection, type SessionState } from "./connection.js";
import { describeRpcError, encodeFrame, isRecord, rpcNotification, rpcRequest } from "./jsonrpc.js";
import { agentOptionsOf, describeIssues, type OptionRef, withTimeoutMeta } from "./params.js";
import {
  CANCELLED_ANSWER,
  failClosedAnswer,
  METHODS,
  parseJson,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  requestPermissionParamsSchema,
  requestPermissionResponseSchema,
  type SessionUpdateParams,
  sessionUpdateParamsSchema,
} from "./protocol.js";

export interface RequestPermissionOptions {
  signal?: AbortSignal;
  /** Expire sooner than the team's request lifetime (the gate takes at least 1 s). */
  timeoutMs?: number;
}

/** @internal What `Tapgate.session()` gives a session. */
export interface GateSessionConfig extends ConnectionConfig {
  onClosed: (session: GateSession) => void;
}

/** The gate's own expiry should answer first; this margin only covers a gate that never answers. */
const LOCAL_TIMEOUT_GRACE_MS = 2_000;
const MAX_TIMER_MS = 2 ** 31 - 1;

interface Pending {
  frame: string;
  options: OptionRef[];
  /** Set once written to a socket: from then on, losing that socket answers the request. */
  sent: boolean;
  resolve: (answer: RequestPermissionResponse) => void;
  dispose: () => void;
}

export class GateSession {
  readonly id: string;
  readonly #cfg: GateSessionConfig;
  readonly #link: GateConnection;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;

  /** @internal Use `Tapgate.session()`. */
  constructor(id: string, cfg: GateSessionConfig) {
    this.id = id;
    this.#cfg = cfg;
    this.#link = new GateConnection(cfg, {
      opened: () => {
        for (const p of this.#pending.values()) if (!p.sent) this.#send(p);
      },
      frame: (text) => this.#onFrame(text),
      dropped: () => {
        for (const [id, p] of this.#pending) if (p.sent) this.#settle(id, failClosedAnswer(p.options));
      },
      closed: () => {
        for (const [id, p] of this.#pending) this.#settle(id, failClosedAnswer(p.options));
        this.#cfg.onClosed(this);
      },
      busy: () => this.#pending.size > 0,
    });
  }

  get state(): SessionState {
    return this.#link.state;
  }

  /** @internal */
  open(): Promise<void> {
    return this.#link.open();
  }

  /** Best-effort: dropped while disconnected; invalid or foreign-session params are dropped with a warning. */
  update(params: SessionUpdateParams): void {
    const parsed = sessionUpdateParamsSchema.safeParse(params);
    const frame = encodeFrame(rpcNotification(METHODS.sessionUpdate, params));
    let problem = parsed.success ? undefined : describeIssues(parsed.error);
    if (!problem && params.sessionId !== this.id) problem = "sessionId is not this session's";
    if (!problem && typeof frame !== "string") problem = frame.error;
    if (problem) this.#cfg.log("warn", `session/update dropped: ${problem}`);
    else if (this.#link.state === "open" && typeof frame === "string") this.#link.send(frame);
  }

  /** Never rejects: every failure resolves to `failClosedAnswer(params.options)`. */
  requestPermission(
    params: RequestPermissionRequest,
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
    return this.#link.ping();
  }

  /** Closes with 1000, stops reconnecting, and answers everything still pending fail-closed. */
  close(): void {
    this.#link.close();
  }

  #encodeRequest(
    id: number,
    params: RequestPermissionRequest,
    timeoutMs: number | undefined,
  ): string | { error: string } {
    const parsed = requestPermissionParamsSchema.safeParse(params);
    if (!parsed.success) return { error: `invalid params (${describeIssues(parsed.error)})` };
    if (params.sessionId !== this.id) return { error: "params.sessionId is not this session's" };
    if (this.#link.state === "closed") return { error: "the session is closed" };
    if (timeoutMs === undefined) return encodeFrame(rpcRequest(id, METHODS.requestPermission, params));
    if (!(timeoutMs > 0 && Number.isFinite(timeoutMs))) return { error: "timeoutMs must be a positive number" };
    const withTimeout = withTimeoutMeta(params, timeoutMs);
    return encodeFrame(rpcRequest(id, METHODS.requestPermission, withTimeout));
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
    this.#link.updateRef();
    if (this.#link.state === "open") this.#send(p);
  }

  #send(p: Pending): void {
    this.#link.send(p.frame);
    p.sent = true;
  }

  #settle(id: number, answer: RequestPermissionResponse): void {
    const p = this.#pending.get(id);
    if (!p) return;
    this.#pending.delete(id);
    p.dispose();
    p.resolve(answer);
    this.#link.updateRef();
  }

  /** Cancel is symmetric: the gate must close the cards of a request the agent stopped waiting for. */
  #abandon(id: number, answer: RequestPermissionResponse): void {
    const p = this.#pending.get(id);
    if (!p) return;
    this.#settle(id, answer);
    if (!p.sent || !this.#link.socketOpen) return;
    this.#link.send(JSON.stringify(rpcNotification(METHODS.cancelRequest, { requestId: id })));
  }

  #onFrame(text: string): void {
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
}
