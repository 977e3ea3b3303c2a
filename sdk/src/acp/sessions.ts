/**
 * One Tapgate session per ACP session id, shared by the proxy, `tapgate run` and
 * `acpPermissionHandler`: opened on first use, and concurrent first uses share one open.
 */
import type { GateSession, LogLevel, SessionMeta, Tapgate } from "../client.js";
import type { CreateElicitationParams, CreateElicitationResponse } from "../elicitation-protocol.js";
import { isRecord } from "../jsonrpc.js";
import type { Progress, RequestPermissionParams, RequestPermissionResponse, SessionUpdateParams } from "../protocol.js";
import { TapgateError } from "../tapgate-error.js";

export interface AskOptions {
  meta: SessionMeta;
  signal?: AbortSignal;
  timeoutMs?: number;
  log: (level: LogLevel, message: string) => void;
  /** Where the request stands, each time it changes. */
  onProgress?: (progress: Progress) => void;
}

interface Entry {
  opening: Promise<GateSession>;
  session?: GateSession;
  meta: SessionMeta;
}

/** Tool calls are all a card needs; the agent's prose stays on this machine. */
const MIRRORED_UPDATES = new Set(["tool_call", "tool_call_update"]);

export class GateSessions {
  readonly #gate: Tapgate;
  readonly #entries = new Map<string, Entry>();

  constructor(gate: Tapgate) {
    this.#gate = gate;
  }

  open(sessionId: string, meta: SessionMeta): Promise<GateSession> {
    const known = this.#entries.get(sessionId);
    if (known && known.session?.state !== "closed") return known.opening;
    const entry: Entry = { opening: this.#gate.session(sessionId, meta), meta };
    this.#entries.set(sessionId, entry);
    entry.opening.then(
      (session) => {
        entry.session = session;
        this.#linkFamily(sessionId, session, meta);
      },
      () => {
        // A failed open is retried by the next request rather than remembered.
        if (this.#entries.get(sessionId) === entry) this.#entries.delete(sessionId);
      },
    );
    return entry.opening;
  }

  /**
   * A subagent's session lives no longer than its parent's connection: when the parent's drops or
   * closes, the child's closes too, so its requests are answered fail-closed and its cards resolve
   * `agent_disconnected` (a later request opens the child's session again).
   */
  #linkFamily(sessionId: string, session: GateSession, meta: SessionMeta): void {
    const parent = meta.parent && this.#entries.get(meta.parent.sessionId)?.session;
    if (parent) endsWith(parent, session);
    for (const entry of this.#entries.values()) {
      if (entry.meta.parent?.sessionId === sessionId && entry.session) endsWith(session, entry.session);
    }
  }

  /** Best effort, like `GateSession.update`: the permission request itself reports an unreachable gate. */
  mirror(params: unknown, meta: (sessionId: string) => SessionMeta): void {
    if (!isRecord(params) || typeof params.sessionId !== "string" || !isRecord(params.update)) return;
    if (!MIRRORED_UPDATES.has(String(params.update.sessionUpdate))) return;
    const update = params as SessionUpdateParams;
    this.open(update.sessionId, meta(update.sessionId)).then(
      (session) => session.update(update),
      () => undefined,
    );
  }

  /**
   * The human's answer, or `undefined` when Tapgate could not be asked at all (not signed in,
   * unreachable): the caller decides whether someone else may still answer or it fails closed.
   */
  async ask(params: RequestPermissionParams, opts: AskOptions): Promise<RequestPermissionResponse | undefined> {
    let session: GateSession;
    try {
      session = await this.open(params.sessionId, opts.meta);
    } catch (err) {
      opts.log("warn", `cannot ask Tapgate, so the permission request is refused: ${describeOpenFailure(err)}`);
      return undefined;
    }
    return session.requestPermission(params, {
      signal: opts.signal,
      timeoutMs: opts.timeoutMs,
      onProgress: opts.onProgress,
    });
  }

  /** The human's answer to an elicitation, or `undefined` when Tapgate could not be asked (as `ask`). */
  async elicit(params: CreateElicitationParams, opts: AskOptions): Promise<CreateElicitationResponse | undefined> {
    let session: GateSession;
    try {
      session = await this.open(params.sessionId, opts.meta);
    } catch (err) {
      opts.log("warn", `cannot ask Tapgate, so the elicitation is cancelled: ${describeOpenFailure(err)}`);
      return undefined;
    }
    return session.elicit(params, { signal: opts.signal, timeoutMs: opts.timeoutMs, onProgress: opts.onProgress });
  }

  /** Best effort: closes the URL card of `elicitationId` in a session already open. */
  complete(sessionId: string, elicitationId: string): void {
    this.#entries.get(sessionId)?.session?.completeElicitation(elicitationId);
  }
}

function endsWith(parent: GateSession, child: GateSession): void {
  const stop = parent.onConnectionEnd(() => {
    stop();
    child.close();
  });
}

const caches = new WeakMap<Tapgate, GateSessions>();

export function sessionsOf(gate: Tapgate): GateSessions {
  let sessions = caches.get(gate);
  if (!sessions) {
    sessions = new GateSessions(gate);
    caches.set(gate, sessions);
  }
  return sessions;
}

export function describeOpenFailure(err: unknown): string {
  if (err instanceof TapgateError && err.code === "no_api_key") {
    return "not signed in: run `tapgate login` (or set TAPGATE_API_KEY)";
  }
  return err instanceof Error ? err.message : String(err);
}
