/**
 * WebSocket plumbing shared by the Durable Objects: how the Worker hands a checked upgrade to an
 * object (with who is connecting), and how sockets are closed without throwing.
 */

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
