/**
 * The WebSocket side of a SessionGate: agents that hold a socket. A request is held by the
 * socket that sent it and answered on it; a socket that closes, errs or falls silent ends what
 * it held (`agent_disconnected`), and a request whose socket a previous instance held ends at
 * start (`service_restart`).
 *
 * Owns: accepting sockets, reading frames, socket-held requests and what a lost socket ends.
 * Does not own: message meaning (agent-rpc.ts), framing (`sdk/src/jsonrpc.ts`), the state machine or the
 * post-change step (the shell).
 */

import type { AgentAsk } from "../../sdk/src/elicitation-protocol";
import { ERRORS } from "../../sdk/src/errors";
import { parseFrame, type RpcMessage, rpcError, rpcIdKey } from "../../sdk/src/jsonrpc";
import { RPC_ERROR, type RpcId } from "../../sdk/src/protocol";
import { randomBase62 } from "../crypto";
import type { Admission } from "./admission";
import { dispatch, type RpcHost } from "./agent-rpc";
import type { GateJoin } from "./api";
import type { Refusal } from "./intake";
import type { Presence } from "./presence";
import { closeQuietly, identityOf, reciprocateClose, type SocketIdentity, type Sockets, send } from "./sockets";
import type { StateMachine } from "./state-machine";
import type { GateStore } from "./store";

/**
 * The most frames (and characters) one socket may have waiting behind a request being admitted:
 * past either, the socket is closed (1013, try again later) and what it held ends, instead of
 * its frames piling up in memory while the team's hub is slow.
 */
export const WAITING_FRAMES_MAX = 64;
export const WAITING_CHARS_MAX = 1024 * 1024;
/** The close code for a socket that sent too much while it had to wait. */
export const CLOSE_FLOODED = 1013;

export interface SocketHost {
  store: GateStore;
  machine: StateMachine;
  admission: Admission;
  presence: Presence;
  sockets: Sockets;
}

export class SocketAgents {
  private readonly rpc: RpcHost;
  /**
   * Frames are handled one after another, in the order they came: a request waiting for the
   * team's quotas holds back the frames after it (a cancel of it included), never reorders them.
   */
  private queue: Promise<void> = Promise.resolve();
  /** What each socket has waiting in `queue`, by socket id. */
  private readonly waiting = new Map<string, { frames: number; chars: number }>();

  constructor(private readonly gate: SocketHost) {
    this.rpc = { ...gate, request: (identity, id, params) => this.request(identity, id, params) };
  }

  /** Accepts an agent's socket, or answers why not: 401 when its key was revoked here, 503 when no policy is known. */
  connect(join: GateJoin): Response {
    const joined = this.gate.presence.join(join);
    if ("refused" in joined) {
      const { refused: error, message } = joined;
      return Response.json({ error, message }, { status: ERRORS[error].status });
    }
    const { 0: client, 1: server } = new WebSocketPair();
    const now = Date.now();
    const identity: SocketIdentity = {
      socketId: randomBase62(16),
      keyId: join.keyId,
      userId: join.userId,
      connectedAt: now,
      lastMessageAt: now,
    };
    this.gate.sockets.accept(server, identity);
    this.gate.presence.noteConnection(now);
    return new Response(null, { status: 101, webSocket: client });
  }

  /**
   * Handles a frame after those before it; resolves once it is handled. A socket with too much
   * waiting already is closed instead (`WAITING_FRAMES_MAX`, `WAITING_CHARS_MAX`).
   */
  message(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const { socketId } = identityOf(ws) as SocketIdentity;
    const size = typeof message === "string" ? message.length : message.byteLength;
    const waiting = this.waiting.get(socketId) ?? { frames: 0, chars: 0 };
    if (waiting.frames >= WAITING_FRAMES_MAX || waiting.chars + size > WAITING_CHARS_MAX) {
      this.drop(ws, CLOSE_FLOODED, "too many frames waiting; reconnect and retry", Date.now());
      return Promise.resolve();
    }
    waiting.frames++;
    waiting.chars += size;
    this.waiting.set(socketId, waiting);
    const handled = this.queue
      .then(() => this.handle(ws, message))
      .finally(() => {
        waiting.frames--;
        waiting.chars -= size;
        if (waiting.frames === 0) this.waiting.delete(socketId);
      });
    this.queue = handled.catch(() => undefined);
    return handled;
  }

  private async handle(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    // A socket closed while this frame waited (by the gate, or its peer): nobody to answer.
    if (ws.readyState !== WebSocket.READY_STATE_OPEN) return;
    const identity = identityOf(ws) as SocketIdentity;
    identity.lastMessageAt = Date.now();
    ws.serializeAttachment(identity);
    if (typeof message !== "string") {
      send(ws, rpcError(null, RPC_ERROR.invalidRequest, "binary frames are not supported; send JSON text"));
      return;
    }
    const parsed = parseFrame(message);
    if (!parsed.ok) {
      send(ws, parsed.response);
      return;
    }
    const replies: object[] = [];
    for (const m of parsed.messages) {
      const reply = m.kind === "invalid" ? m.response : await this.dispatchSafely(identity, m);
      if (reply) replies.push(reply);
    }
    if (replies.length > 0) send(ws, parsed.batch ? replies : replies[0]);
  }

  /** One message's reply; a failure answers that request with an error instead of leaving it unanswered. */
  private async dispatchSafely(identity: SocketIdentity, m: RpcMessage): Promise<object | null> {
    try {
      return await dispatch(this.rpc, identity, m);
    } catch {
      return m.kind === "request" ? rpcError(m.id, RPC_ERROR.internal, "internal error; nothing was held") : null;
    }
  }

  /**
   * The socket closed (the peer's close is answered at once) or failed: returns its id, whose
   * requests `endClosed` ends (now or a moment later: closed-sockets.ts).
   */
  closed(ws: WebSocket, close?: { code: number; reason: string }): string {
    if (close) reciprocateClose(ws, close.code, close.reason);
    return (identityOf(ws) as SocketIdentity).socketId;
  }

  /** What closed sockets held ends (`agent_disconnected`), and the session reports its connection. */
  endClosed(socketIds: string[], now: number): void {
    for (const socketId of socketIds) {
      this.gate.machine.resolveAll(
        this.gate.store.pendingOnSocket(socketId),
        { state: "denied", reason: "agent_disconnected" },
        now,
      );
      this.gate.store.forgetToolCalls(socketId);
    }
    this.gate.presence.noteConnection(now);
  }

  /** Holds a socket's permission request until it is decided; returns an error reply if it is refused. */
  private async request(identity: SocketIdentity, id: RpcId, params: AgentAsk): Promise<object | null> {
    const meta = this.gate.store.meta();
    if (!meta) return rpcError(id, RPC_ERROR.internal, "session not initialised");
    const rpcKey = rpcIdKey(id);
    if (this.gate.store.pendingForRpc(identity.socketId, rpcKey).length > 0) {
      return rpcError(id, RPC_ERROR.invalidRequest, `id ${rpcKey} is already pending on this socket`);
    }
    const holder = { socketId: identity.socketId, rpcKey, keyId: identity.keyId, leaseUntil: null };
    const alive = () => this.gate.sockets.heardFrom(identity.socketId, Date.now());
    const opened = await this.gate.admission.open(meta, holder, params, Date.now(), alive);
    return "refused" in opened ? refusalReply(id, opened) : null;
  }

  /** Closes sockets silent (half-open) for two heartbeats, ending what they held. */
  closeSilent(now: number): void {
    for (const { ws, identity } of this.gate.sockets.all()) {
      if (this.gate.sockets.silent(ws, identity, now)) this.drop(ws, 4000, "no heartbeat", now);
    }
  }

  /** Closes a socket from this side and ends what it held now (its peer may never answer the close). */
  private drop(ws: WebSocket, code: number, reason: string, now: number): void {
    closeQuietly(ws, code, reason);
    const { socketId } = identityOf(ws) as SocketIdentity;
    this.gate.machine.resolveAll(
      this.gate.store.pendingOnSocket(socketId),
      { state: "denied", reason: "agent_disconnected" },
      now,
    );
  }

  /**
   * A pending request whose socket is gone was held by a previous instance (restart, reset,
   * deploy): nobody can answer it any more, so it ends now rather than never. HTTP-held requests
   * are not orphans: their agent polls any instance until its lease lapses.
   */
  resolveOrphans(now: number): void {
    const live = this.gate.sockets.liveIds();
    const orphans = this.gate.store.pendingSocketHeld().filter((row) => !live.has(row.socket_id));
    this.gate.machine.resolveAll(orphans, { state: "denied", reason: "service_restart" }, now);
  }

  /** A revoked key's sockets close. */
  closeKey(keyId: string): void {
    this.gate.sockets.closeKey(keyId, 4001, "API key revoked");
  }
}

/** The JSON-RPC error for a refused request; quota refusals say which limit and when to retry. */
function refusalReply(id: RpcId, r: Refusal): object {
  switch (r.refused) {
    case "quota":
      return rpcError(id, RPC_ERROR.tooManyPending, r.message, {
        reason: "quota",
        limit: r.limit,
        retryAfterMs: r.retryAfterMs,
      });
    case "quota_unavailable":
      return rpcError(id, RPC_ERROR.internal, r.message, { reason: "quota_unavailable", retryAfterMs: r.retryAfterMs });
    case "too_many_pending":
      return rpcError(id, RPC_ERROR.tooManyPending, r.message);
    case "holder_gone":
    case "not_held":
      return rpcError(id, RPC_ERROR.internal, r.message);
    case "key_revoked":
      return rpcError(id, RPC_ERROR.invalidRequest, r.message, { reason: "key_revoked" });
    case "session_stopped":
      return rpcError(id, RPC_ERROR.tooManyPending, r.message, { reason: "session_stopped", stopped: r.stopped });
    case "invalid_params":
      if (r.reason) return rpcError(id, RPC_ERROR.invalidParams, r.message, { reason: r.reason });
      return rpcError(id, RPC_ERROR.invalidParams, r.message, r.issues && { issues: r.issues });
  }
}
