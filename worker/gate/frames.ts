/**
 * JSON-RPC framing for agent sockets: parsing a text frame into messages, the frame-size and
 * depth limits, id keys and the reply builders.
 *
 * Owns: pure framing, no state. Does not own: what a message means (agent-rpc.ts) or sockets
 * (sockets.ts). Runs under plain Node (frames.test.ts). To be replaced by `sdk/src/jsonrpc.ts`
 * once that lands, so the Worker and the SDK share one framing module.
 */
import { LIMITS, RPC_ERROR, type RpcError, type RpcId, rpcIdSchema } from "../../sdk/src/protocol";

export type RpcMessage =
  | { kind: "request"; id: RpcId; method: string; params: unknown }
  | { kind: "notification"; method: string; params: unknown }
  /** A response from the agent: Tapgate never sends the agent requests, so these are ignored. */
  | { kind: "response" };

export type Parsed =
  | { ok: true; batch: boolean; messages: Array<RpcMessage | { kind: "invalid"; response: object }> }
  | { ok: false; response: object };

export const rpcResult = (id: RpcId, result: unknown) => ({ jsonrpc: "2.0" as const, id, result });

export const rpcError = (id: RpcId | null, code: number, message: string, data?: unknown) => {
  const error: RpcError = data === undefined ? { code, message } : { code, message, data };
  return { jsonrpc: "2.0" as const, id, error };
};

/** Parses one text frame into JSON-RPC messages, or the error response the frame deserves. */
export function parseFrame(text: string): Parsed {
  if (exceedsBytes(text, LIMITS.frameBytes)) {
    return fail(RPC_ERROR.invalidRequest, `frame larger than ${LIMITS.frameBytes} bytes`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return fail(RPC_ERROR.parse, "parse error: frame is not valid JSON");
  }
  if (depthExceeds(value, LIMITS.jsonDepth)) {
    return {
      ok: false,
      response: rpcError(idOf(value), RPC_ERROR.invalidRequest, `JSON nested deeper than ${LIMITS.jsonDepth}`),
    };
  }
  if (!Array.isArray(value)) return { ok: true, batch: false, messages: [classify(value)] };
  if (value.length === 0) return fail(RPC_ERROR.invalidRequest, "empty batch");
  return { ok: true, batch: true, messages: value.map(classify) };
}

function fail(code: number, message: string): Parsed {
  return { ok: false, response: rpcError(null, code, message) };
}

export function classify(value: unknown): RpcMessage | { kind: "invalid"; response: object } {
  const invalid = (message: string) => ({
    kind: "invalid" as const,
    response: rpcError(idOf(value), RPC_ERROR.invalidRequest, message),
  });
  if (typeof value !== "object" || value === null || Array.isArray(value)) return invalid("not a JSON-RPC 2.0 message");
  const m = value as Record<string, unknown>;
  if (m.jsonrpc !== "2.0") return invalid('"jsonrpc" must be "2.0"');
  if (typeof m.method !== "string") {
    return "result" in m || "error" in m ? { kind: "response" } : invalid('"method" must be a string');
  }
  if ("params" in m && (typeof m.params !== "object" || m.params === null)) {
    return invalid('"params" must be an object or an array');
  }
  if (!("id" in m)) return { kind: "notification", method: m.method, params: m.params };
  const id = rpcIdSchema.safeParse(m.id);
  if (!id.success) return invalid("id must be a string of at most 128 characters or a safe integer");
  return { kind: "request", id: id.data, method: m.method, params: m.params };
}

/** The id to echo in an error: the message's own id when it is a valid one, else null. */
function idOf(value: unknown): RpcId | null {
  if (typeof value !== "object" || value === null || !("id" in value)) return null;
  const id = rpcIdSchema.safeParse((value as { id: unknown }).id);
  return id.success ? id.data : null;
}

/** Iterative, so a hostile frame cannot overflow the stack. */
export function depthExceeds(root: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop() as [unknown, number];
    if (typeof value !== "object" || value === null) continue;
    if (depth > max) return true;
    for (const child of Object.values(value)) stack.push([child, depth + 1]);
  }
  return false;
}

export function exceedsBytes(text: string, max: number): boolean {
  return utf8Length(text, max) > max;
}

function utf8Length(text: string, max: number): number {
  // Cheap bounds first: every UTF-16 unit is 1-3 bytes.
  if (text.length * 3 <= max) return text.length;
  if (text.length > max) return text.length;
  return new TextEncoder().encode(text).length;
}

/** A stable key for a JSON-RPC id: `1` and `"1"` are different requests. */
export const rpcIdKey = (id: RpcId) => JSON.stringify(id);
