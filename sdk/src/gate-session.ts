/**
 * `GateSession`: one agent session's permission requests and elicitations at Tapgate. Owns the
 * requests in flight (their JSON-RPC ids, local timeouts, abort signals), the frames that carry
 * them, and the rule that every path which is not a human decision answers fail-closed (the
 * first `reject_once` or `cancelled` for a permission, `{action: "cancel"}` for an elicitation).
 *
 * In a private team (docs/agent-protocol.md "Private requests") every request is sealed here to the
 * team's trusted devices (`private/`), whichever way it came in, and `session/update` content is
 * kept in this process only (for the card's tool call), never sent.
 *
 * Does not own the socket: `connection.ts` opens, heartbeats and reconnects it, and tells this
 * class when it opened, dropped or closed for good.
 */
import { type ConnectionConfig, GateConnection, type SessionState } from "./connection.js";
import {
  type AgentAnswer,
  type CreateElicitationParams,
  type CreateElicitationResponse,
  completeElicitationParamsSchema,
  createElicitationParamsSchema,
  createElicitationResponseSchema,
  ELICITATION_CANCELLED,
} from "./elicitation-protocol.js";
import { answerFits, offeredPermissionAnswer, privateRequired, stopNotice } from "./gate-replies.js";
import { describeRpcError, encodeFrame, isRecord, rpcNotification, rpcRequest } from "./jsonrpc.js";
import { agentOptionsOf, describeIssues, withTimeoutMeta } from "./params.js";
import type { SealingSession } from "./private/seal-params.js";
import { SessionSealer } from "./private/session-sealer.js";
import type { TeamPrivacy } from "./private/team-privacy.js";
import {
  CANCELLED_ANSWER,
  failClosedAnswer,
  METHODS,
  type Progress,
  parseJson,
  progressParamsSchema,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  requestPermissionParamsSchema,
  type SessionUpdateParams,
  sessionUpdateParamsSchema,
} from "./protocol.js";

export interface RequestPermissionOptions {
  signal?: AbortSignal;
  /** Expire sooner than the team's request lifetime (the gate takes at least 1 s). */
  timeoutMs?: number;
  /**
   * Where the request stands, each time it changes (`_tapgate/progress`): the devices it reached,
   * who saw it, whom it escalated to, or that nothing could be reached. Called until the answer.
   */
  onProgress?: (progress: Progress) => void;
}

/** @internal What `Tapgate.session()` gives a session. */
export interface GateSessionConfig extends ConnectionConfig {
  onClosed: (session: GateSession) => void;
  /** The team's privacy: whether and to whom requests are sealed. */
  privacy: TeamPrivacy;
  /** What the session's cards say of it (the hello's words, `cwd` included even when the hello leaves it out). */
  sessionInfo: SealingSession;
  ruleKey?: string;
}

/** The gate's own expiry should answer first; this margin only covers a gate that never answers. */
const LOCAL_TIMEOUT_GRACE_MS = 2_000;
const MAX_TIMER_MS = 2 ** 31 - 1;

interface Pending {
  /** What goes on the wire, once known (sealing a private request takes a moment). */
  frame?: string;
  /** The frame for this request: sealed when the team is private (`refresh`: ask the service again first). */
  build: (refresh: boolean) => Promise<string | { error: string }>;
  /** Whether this request was already re-sent sealed after a `private_required` refusal. */
  resealed: boolean;
  /** The fail-closed answer every failure gives this request. */
  denied: AgentAnswer;
  /** The service's answer if it is a valid one for this request, else undefined (then it fails closed). */
  valid: (result: unknown) => AgentAnswer | undefined;
  /** Set once written to a socket: from then on, losing that socket answers the request. */
  sent: boolean;
  resolve: (answer: AgentAnswer) => void;
  dispose: () => void;
  onProgress?: (progress: Progress) => void;
}

export class GateSession {
  readonly id: string;
  readonly #cfg: GateSessionConfig;
  readonly #link: GateConnection;
  readonly #pending = new Map<number, Pending>();
  readonly #endListeners = new Set<() => void>();
  readonly #sealer: SessionSealer;
  #nextId = 1;

  /** @internal Use `Tapgate.session()`. */
  constructor(id: string, cfg: GateSessionConfig) {
    this.id = id;
    this.#cfg = cfg;
    this.#sealer = new SessionSealer(cfg.privacy, cfg.sessionInfo, cfg.ruleKey);
    this.#link = new GateConnection(cfg, {
      opened: () => {
        for (const p of this.#pending.values()) if (!p.sent && p.frame) this.#send(p);
      },
      frame: (text) => this.#onFrame(text),
      dropped: () => {
        for (const [id, p] of this.#pending) if (p.sent) this.#settle(id, p.denied);
        this.#connectionEnded();
      },
      closed: () => {
        for (const [id, p] of this.#pending) this.#settle(id, p.denied);
        this.#cfg.onClosed(this);
        this.#connectionEnded();
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
    if (problem) {
      this.#cfg.log("warn", `session/update dropped: ${problem}`);
      return;
    }
    this.#sealer.remember(params.update);
    // A private team's service sees no content: the update stays here, for this session's cards.
    if (this.#sealer.private) return;
    if (this.#link.state === "open" && typeof frame === "string") this.#link.send(frame);
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
    const valid = (result: unknown) => offeredPermissionAnswer(result, options);
    const build = (refresh: boolean) => this.#frameIn(id, params, frame, refresh, opts.timeoutMs);
    return new Promise((resolve) => {
      const p: Pending = {
        build,
        resealed: false,
        denied,
        valid,
        sent: false,
        resolve: resolve as Pending["resolve"],
        dispose: () => {},
        onProgress: opts.onProgress,
      };
      this.#track(id, p, CANCELLED_ANSWER, opts);
    });
  }

  /**
   * Asks the human a question (ACP `elicitation/create`: a form, or a URL to open). Never rejects:
   * every failure, the signal and a local timeout resolve to `{action: "cancel"}`.
   */
  elicit(params: CreateElicitationParams, opts: RequestPermissionOptions = {}): Promise<CreateElicitationResponse> {
    if (opts.signal?.aborted) return Promise.resolve(ELICITATION_CANCELLED);
    const id = this.#nextId++;
    const parsed = createElicitationParamsSchema.safeParse(params);
    let frame: string | { error: string } = parsed.success
      ? this.#frameFor(id, METHODS.elicitationCreate, params, opts.timeoutMs)
      : { error: `invalid params (${describeIssues(parsed.error)})` };
    if (typeof frame === "string" && params.sessionId !== this.id)
      frame = { error: "params.sessionId is not this session's" };
    if (typeof frame !== "string") {
      this.#cfg.log("warn", `elicitation answered cancel without asking: ${frame.error}`);
      return Promise.resolve(ELICITATION_CANCELLED);
    }
    const valid = (result: unknown) => {
      const answer = createElicitationResponseSchema.safeParse(result);
      // A sealed question's answer is not checked by the service (it cannot read the form): here it is.
      return answer.success && answerFits(params, answer.data) ? answer.data : undefined;
    };
    const standard = frame;
    const build = (refresh: boolean) => this.#frameIn(id, params, standard, refresh, opts.timeoutMs);
    return new Promise((resolve) => {
      const p: Pending = {
        build,
        resealed: false,
        denied: ELICITATION_CANCELLED,
        valid,
        sent: false,
        resolve: resolve as Pending["resolve"],
        dispose: () => {},
        onProgress: opts.onProgress,
      };
      this.#track(id, p, ELICITATION_CANCELLED, opts);
    });
  }

  /** Best-effort, like `update`: the URL-mode interaction `elicitationId` is over, so its card closes. */
  completeElicitation(elicitationId: string): void {
    const params = { elicitationId };
    if (!completeElicitationParamsSchema.safeParse(params).success) return;
    // A private team's gate never saw the id (it is sealed with the question), and its card closes with the answer.
    if (this.#sealer.private) return;
    if (this.#link.state === "open") {
      this.#link.send(JSON.stringify(rpcNotification(METHODS.elicitationComplete, params)));
    }
  }

  /** Round trip of a raw `ping` → `pong`, in milliseconds. */
  ping(): Promise<number> {
    return this.#link.ping();
  }

  /** Closes with 1000, stops reconnecting, and answers everything still pending fail-closed. */
  close(): void {
    this.#link.close();
  }

  /**
   * Calls `listener` each time this session's connection ends (dropped, or closed for good): its
   * requests in flight have just been answered fail-closed. Returns the unsubscribe.
   */
  onConnectionEnd(listener: () => void): () => void {
    this.#endListeners.add(listener);
    return () => this.#endListeners.delete(listener);
  }

  #connectionEnded(): void {
    for (const listener of [...this.#endListeners]) listener();
  }

  #encodeRequest(
    id: number,
    params: RequestPermissionRequest,
    timeoutMs: number | undefined,
  ): string | { error: string } {
    const parsed = requestPermissionParamsSchema.safeParse(params);
    if (!parsed.success) return { error: `invalid params (${describeIssues(parsed.error)})` };
    if (params.sessionId !== this.id) return { error: "params.sessionId is not this session's" };
    return this.#frameFor(id, METHODS.requestPermission, params, timeoutMs);
  }

  #frameFor<T extends { _meta?: Record<string, unknown> | null }>(
    id: number,
    method: string,
    params: T,
    timeoutMs: number | undefined,
  ): string | { error: string } {
    if (this.#link.state === "closed") return { error: "the session is closed" };
    if (timeoutMs === undefined) return encodeFrame(rpcRequest(id, method, params));
    if (!(timeoutMs > 0 && Number.isFinite(timeoutMs))) return { error: "timeoutMs must be a positive number" };
    return encodeFrame(rpcRequest(id, method, withTimeoutMeta(params, timeoutMs)));
  }

  /** `cancelled` is what the caller's own signal answers; a local timeout answers `p.denied`. */
  #track(id: number, p: Pending, cancelled: AgentAnswer, { signal, timeoutMs }: RequestPermissionOptions): void {
    const onAbort = () => this.#abandon(id, cancelled);
    const localMs = Math.min((timeoutMs ?? 0) + LOCAL_TIMEOUT_GRACE_MS, MAX_TIMER_MS);
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => this.#abandon(id, p.denied), localMs);
    signal?.addEventListener("abort", onAbort, { once: true });
    p.dispose = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    };
    this.#pending.set(id, p);
    this.#link.updateRef();
    void this.#prepare(id, p, false);
  }

  /** Builds the request's frame (sealing it in a private team) and sends it, unless it ended meanwhile. */
  async #prepare(id: number, p: Pending, refresh: boolean): Promise<void> {
    let frame: string | { error: string };
    try {
      frame = await p.build(refresh);
    } catch (err) {
      frame = { error: err instanceof Error ? err.message : String(err) };
    }
    if (this.#pending.get(id) !== p) return;
    if (typeof frame !== "string") {
      this.#cfg.log("warn", `request answered fail-closed without asking: ${frame.error}`);
      this.#settle(id, p.denied);
      return;
    }
    p.frame = frame;
    if (this.#link.state === "open") this.#send(p);
  }

  /**
   * The frame for a request in the team's privacy: `standard` as it is, or the request sealed to
   * the trusted devices (none trusted: an error, and the request is answered fail-closed here).
   */
  async #frameIn(
    id: number,
    ask: RequestPermissionRequest | CreateElicitationParams,
    standard: string,
    refresh: boolean,
    timeoutMs: number | undefined,
  ): Promise<string | { error: string }> {
    const sealing = await this.#sealer.seal(ask, refresh);
    if ("error" in sealing) return sealing;
    if (sealing.standard) return standard;
    const method = "mode" in ask ? METHODS.elicitationCreate : METHODS.requestPermission;
    return this.#frameFor(id, method, sealing.params, timeoutMs);
  }

  #send(p: Pending): void {
    if (!p.frame) return;
    this.#link.send(p.frame);
    p.sent = true;
  }

  #settle(id: number, answer: AgentAnswer): void {
    const p = this.#pending.get(id);
    if (!p) return;
    this.#pending.delete(id);
    p.dispose();
    p.resolve(answer);
    this.#link.updateRef();
  }

  /** Cancel is symmetric: the gate must close the cards of a request the agent stopped waiting for. */
  #abandon(id: number, answer: AgentAnswer): void {
    const p = this.#pending.get(id);
    if (!p) return;
    this.#settle(id, answer);
    if (!p.sent || !this.#link.socketOpen) return;
    this.#link.send(JSON.stringify(rpcNotification(METHODS.cancelRequest, { requestId: id })));
  }

  #onFrame(text: string): void {
    const msg = parseJson(text);
    if (isRecord(msg) && msg.method === METHODS.progress && !("id" in msg)) {
      this.#onProgress(msg.params);
      return;
    }
    if (!isRecord(msg) || !("id" in msg)) {
      if (msg === undefined) this.#cfg.log("warn", "ignored an unparsable frame from Tapgate");
      return;
    }
    const p = typeof msg.id === "number" ? this.#pending.get(msg.id) : undefined;
    if (p?.sent && typeof msg.id === "number" && privateRequired(msg) && !p.resealed) {
      // The team turned private since we last asked: learn its devices now and ask once more, sealed.
      this.#cfg.log("info", "the team is private: sealing the request and asking again");
      p.resealed = true;
      p.sent = false;
      p.frame = undefined;
      void this.#prepare(msg.id, p, true);
      return;
    }
    if (p?.sent && typeof msg.id === "number") this.#settle(msg.id, this.#answerFrom(msg, p));
    else if (isRecord(msg.error)) this.#cfg.log("warn", `Tapgate error ${describeRpcError(msg.error)}`);
  }

  /** A progress notification for a request still in flight; a throwing callback is logged, never fatal. */
  #onProgress(params: unknown): void {
    const parsed = progressParamsSchema.safeParse(params);
    const id = parsed.success ? parsed.data.requestId : undefined;
    const p = typeof id === "number" ? this.#pending.get(id) : undefined;
    if (!parsed.success || !p?.sent || !p.onProgress) return;
    try {
      p.onProgress(parsed.data);
    } catch (err) {
      this.#cfg.log("warn", `onProgress threw: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  #answerFrom(msg: Record<string, unknown>, p: Pending): AgentAnswer {
    // A stopped session says who stopped it and why, whether it refused the request or denied it.
    const stopped = stopNotice(msg);
    if (stopped) this.#cfg.log("warn", stopped);
    // The service's answer goes to the caller as sent, `_meta` (who decided, why) included.
    const answer = "error" in msg ? undefined : p.valid(msg.result);
    if (answer) return answer;
    const why = isRecord(msg.error) ? describeRpcError(msg.error) : "malformed or unoffered answer";
    if (!stopped) this.#cfg.log("warn", `request failed closed: ${why}`);
    return p.denied;
  }
}
