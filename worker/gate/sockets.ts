/**
 * Agent sockets of a SessionGate: how the Worker hands it a checked upgrade (with who is
 * connecting), each socket's identity (kept in its attachment, so it survives hibernation),
 * which sockets are live, and sending and closing without throwing.
 *
 * Owns: socket bookkeeping (tags, attachments, accept, send, close). Does not own: what a
 * message means (agent-rpc.ts) or what a lost socket ends (socket-agents.ts). The upgrade and
 * close helpers are shared with the TeamHub's live feed.
 */

import { rpcResult } from "../../sdk/src/jsonrpc";
import { HEARTBEAT_INTERVAL_MS, type RpcId } from "../../sdk/src/protocol";
import type { GateJoin } from "./api";

/** Per-socket identity, kept in the socket's attachment so it survives hibernation. */
export interface SocketIdentity {
  socketId: string;
  keyId: string;
  userId: string;
  connectedAt: number;
  lastMessageAt: number;
}

/** A socket not heard from for longer (no frame, no ping) is half-open: closed by the sweep, never answered. */
export const SILENT_AFTER_MS = 2 * HEARTBEAT_INTERVAL_MS;

export const socketTag = (socketId: string) => `socket:${socketId}`;
export const keyTag = (keyId: string) => `key:${keyId}`;

const IDENTITY_HEADER = "x-tapgate-join";

/** The upgrade the Worker sends a SessionGate for an agent whose key it checked. */
export function joinRequest(request: Request, join: GateJoin): Request {
  return objectUpgrade(request, IDENTITY_HEADER, join);
}

/** Who an upgrade request joins as, or null when it did not come from the Worker. */
export function joinOf(request: Request): GateJoin | null {
  return upgradeIdentity<GateJoin>(request, IDENTITY_HEADER);
}

/** A SessionGate's live agent sockets, through its Durable Object state. */
export class Sockets {
  constructor(private readonly ctx: DurableObjectState) {}

  /** Accepts a hibernatable socket for `identity`; tagged by socket and by key. */
  accept(server: WebSocket, identity: SocketIdentity): void {
    this.ctx.acceptWebSocket(server, [socketTag(identity.socketId), keyTag(identity.keyId)]);
    server.serializeAttachment(identity);
  }

  /** Every socket with its identity (sockets without one are skipped). */
  all(): Array<{ ws: WebSocket; identity: SocketIdentity }> {
    return this.ctx.getWebSockets().flatMap((ws) => {
      const identity = identityOf(ws);
      return identity ? [{ ws, identity }] : [];
    });
  }

  /** The ids of the sockets this instance holds. */
  liveIds(): Set<string | undefined> {
    return new Set(this.ctx.getWebSockets().map((ws) => identityOf(ws)?.socketId));
  }

  /** Whether any socket is open: what the session reports as `connected`. */
  anyOpen(): boolean {
    return this.ctx.getWebSockets().some((ws) => ws.readyState === WebSocket.READY_STATE_OPEN);
  }

  /** When the agent last showed life on `ws`: a message, or an auto-answered ping. */
  lastSeen(ws: WebSocket, identity: SocketIdentity): number {
    const lastPing = this.ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? 0;
    return Math.max(lastPing, identity.lastMessageAt);
  }

  /** Whether `ws` has been silent too long at `now` (no frame, no ping for SILENT_AFTER_MS). */
  silent(ws: WebSocket, identity: SocketIdentity, now: number): boolean {
    return now - this.lastSeen(ws, identity) > SILENT_AFTER_MS;
  }

  /**
   * Whether a frame sent to socket `socketId` now can reach its agent: the socket is open (not
   * closing, not closed) and was heard from within SILENT_AFTER_MS.
   */
  heardFrom(socketId: string, now: number): boolean {
    return this.ctx.getWebSockets(socketTag(socketId)).some((ws) => {
      const identity = identityOf(ws);
      return ws.readyState === WebSocket.READY_STATE_OPEN && identity !== null && !this.silent(ws, identity, now);
    });
  }

  /** A JSON-RPC result to the socket that sent request `rpcKey` (none for HTTP-held requests). */
  answer(socketId: string, rpcKey: string, result: unknown): void {
    const id = JSON.parse(rpcKey) as RpcId;
    for (const ws of this.ctx.getWebSockets(socketTag(socketId))) send(ws, rpcResult(id, result));
  }

  /** A JSON-RPC notification to one socket (none for HTTP-held requests, whose socket id is empty). */
  notify(socketId: string, method: string, params: unknown): void {
    if (socketId === "") return;
    for (const ws of this.ctx.getWebSockets(socketTag(socketId))) send(ws, { jsonrpc: "2.0", method, params });
  }

  closeKey(keyId: string, code: number, reason: string): void {
    for (const ws of this.ctx.getWebSockets(keyTag(keyId))) closeQuietly(ws, code, reason);
  }
}

export function identityOf(ws: WebSocket): SocketIdentity | null {
  return ws.deserializeAttachment() as SocketIdentity | null;
}

export function send(ws: WebSocket, message: unknown): void {
  // A socket that is closing takes no frame; its close handler resolves what it held.
  if (ws.readyState !== WebSocket.READY_STATE_OPEN) return;
  try {
    ws.send(JSON.stringify(message));
  } catch {
    // The socket is closing; its close handler resolves what it held.
  }
}

/**
 * A fresh upgrade request for a Durable Object, carrying `identity` in `header`. Built from
 * scratch so nothing the client sent can pose as the identity the Worker checked.
 *
 * @example
 * stub.fetch(objectUpgrade(c.req.raw, "x-tapgate-join", { teamId, userId }))
 */
export function objectUpgrade(request: Request, header: string, identity: object): Request {
  const headers = new Headers({ Upgrade: "websocket", [header]: JSON.stringify(identity) });
  for (const name of ["sec-websocket-key", "sec-websocket-version", "sec-websocket-protocol"]) {
    const value = request.headers.get(name);
    if (value) headers.set(name, value);
  }
  return new Request(request.url, { headers });
}

/** The identity an upgrade carries, or null when the request did not come from the Worker. */
export function upgradeIdentity<T>(request: Request, header: string): T | null {
  const value = request.headers.get(header);
  if (request.headers.get("Upgrade") !== "websocket" || !value) return null;
  return JSON.parse(value) as T;
}

export function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, reason);
  } catch {
    // Already closed.
  }
}

/** Answers a peer's close, or it never sees the close completed (1005/1006 cannot be sent back). */
export function reciprocateClose(ws: WebSocket, code: number, reason: string): void {
  closeQuietly(ws, code === 1005 || code === 1006 ? 1000 : code, reason);
}
