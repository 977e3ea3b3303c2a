/**
 * JSON-RPC 2.0 framing, written once for everyone who speaks it: the Worker's gate (agent
 * sockets), the SDK's `GateSession` and the `tapgate acp` proxy. Owns: reading a frame (size and
 * depth limits, batches, classifying requests, notifications and responses), the key a request
 * is remembered by, and building the messages that go out.
 *
 * Does not own: what a method means (the gate and the proxy decide), the method names, error
 * codes and limits themselves (`protocol.ts`), or any transport. Environment-neutral: no Node
 * and no Workers APIs here, so it runs in workerd, in Node and under plain vitest.
 */
import { duplicateKeyMessage, findDuplicateKey } from "./duplicate-keys.js";
import { LIMITS, parseJson, RPC_ERROR, type RpcError, type RpcId, rpcIdSchema } from "./protocol.js";

export type { RpcError, RpcId } from "./protocol.js";

/** A plain JSON object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------------
// Building messages

export const rpcRequest = <Id>(id: Id, method: string, params: unknown) => ({
  jsonrpc: "2.0" as const,
  id,
  method,
  params,
});

export const rpcNotification = (method: string, params: unknown) => ({ jsonrpc: "2.0" as const, method, params });

export const rpcResult = <Id>(id: Id, result: unknown) => ({ jsonrpc: "2.0" as const, id, result });

export const rpcError = <Id>(id: Id, code: number, message: string, data?: unknown) => {
  const error: RpcError = data === undefined ? { code, message } : { code, message, data };
  return { jsonrpc: "2.0" as const, id, error };
};

/** A stable map key for a JSON-RPC id: `1` and `"1"` are different requests. */
export function rpcIdKey(id: unknown): string {
  return JSON.stringify(id) ?? "undefined";
}

/** For logs: the code and at most 200 characters of the message (never `data`). */
export function describeRpcError(error: Record<string, unknown>): string {
  return `${String(error.code)} ${typeof error.message === "string" ? error.message.slice(0, 200) : ""}`.trim();
}

// ---------------------------------------------------------------------------------------------
// Limits

export interface FrameLimits {
  frameBytes: number;
  jsonDepth: number;
}

const AGENT_LIMITS: FrameLimits = { frameBytes: LIMITS.frameBytes, jsonDepth: LIMITS.jsonDepth };

/** Whether `root` nests objects or arrays deeper than `max` (a bare object is depth 1). Iterative, so a hostile frame cannot overflow the stack. */
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

/** Whether `text` takes more than `maxBytes` bytes as UTF-8; encodes only when the length cannot tell. */
export function exceedsBytes(text: string, maxBytes: number): boolean {
  // Cheap bounds first: every UTF-16 unit is 1-3 bytes.
  if (text.length * 3 <= maxBytes) return false;
  if (text.length > maxBytes) return true;
  return new TextEncoder().encode(text).length > maxBytes;
}

/**
 * Serializes an outgoing message, or says why the other side would refuse it (too large, too
 * deep, not JSON): refusing it here keeps the socket, and every other request on it, alive.
 */
export function encodeFrame(message: object, limits: FrameLimits = AGENT_LIMITS): string | { error: string } {
  let frame: string;
  try {
    frame = JSON.stringify(message);
  } catch {
    return { error: "params are not JSON-serializable" };
  }
  if (exceedsBytes(frame, limits.frameBytes)) return { error: `frame exceeds ${limits.frameBytes} bytes` };
  if (depthExceeds(message, limits.jsonDepth)) return { error: `JSON nests deeper than ${limits.jsonDepth}` };
  return frame;
}

// ---------------------------------------------------------------------------------------------
// Reading frames strictly (the gate: it answers every malformed message with an error)

export type RpcMessage =
  | { kind: "request"; id: RpcId; method: string; params: unknown }
  | { kind: "notification"; method: string; params: unknown }
  /** Has no method but a `result` or an `error`; the id is as sent, unvalidated. */
  | { kind: "response"; id: unknown; result: unknown; error: unknown };

/** The error response to a message (or frame) that breaks JSON-RPC 2.0. */
export type RpcErrorResponse = { jsonrpc: "2.0"; id: RpcId | null; error: RpcError };

/** A message that breaks JSON-RPC 2.0, with the error response it deserves. */
export type InvalidMessage = { kind: "invalid"; response: RpcErrorResponse };

export type ParsedFrame =
  | { ok: true; batch: boolean; messages: Array<RpcMessage | InvalidMessage> }
  | { ok: false; response: RpcErrorResponse };

/** Parses one text frame into JSON-RPC messages, or the error response the whole frame deserves. */
export function parseFrame(text: string, limits: FrameLimits = AGENT_LIMITS): ParsedFrame {
  if (exceedsBytes(text, limits.frameBytes)) {
    return refuse(RPC_ERROR.invalidRequest, `frame larger than ${limits.frameBytes} bytes`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return refuse(RPC_ERROR.parse, "parse error: frame is not valid JSON");
  }
  if (depthExceeds(value, limits.jsonDepth)) {
    return {
      ok: false,
      response: rpcError(echoedId(value), RPC_ERROR.invalidRequest, `JSON nested deeper than ${limits.jsonDepth}`),
    };
  }
  const duplicate = findDuplicateKey(text);
  if (duplicate) {
    // A duplicated top-level "id" leaves no id to trust; any other duplicate still names one.
    const id = duplicate.key === "id" && duplicate.depth === 1 ? null : echoedId(value);
    return { ok: false, response: rpcError(id, RPC_ERROR.invalidRequest, duplicateKeyMessage(duplicate)) };
  }
  if (!Array.isArray(value)) return { ok: true, batch: false, messages: [classify(value)] };
  if (value.length === 0) return refuse(RPC_ERROR.invalidRequest, "empty batch");
  return { ok: true, batch: true, messages: value.map(classify) };
}

function refuse(code: number, message: string): ParsedFrame {
  return { ok: false, response: rpcError(null, code, message) };
}

/** One parsed JSON value as a JSON-RPC 2.0 message, validated (`jsonrpc`, `params`, the id's kind). */
export function classify(value: unknown): RpcMessage | InvalidMessage {
  const invalid = (message: string): InvalidMessage => ({
    kind: "invalid",
    response: rpcError(echoedId(value), RPC_ERROR.invalidRequest, message),
  });
  if (!isRecord(value)) return invalid("not a JSON-RPC 2.0 message");
  if (value.jsonrpc !== "2.0") return invalid('"jsonrpc" must be "2.0"');
  if (typeof value.method !== "string") {
    return "result" in value || "error" in value
      ? { kind: "response", id: value.id, result: value.result, error: value.error }
      : invalid('"method" must be a string');
  }
  if ("params" in value && (typeof value.params !== "object" || value.params === null)) {
    return invalid('"params" must be an object or an array');
  }
  if (!("id" in value)) return { kind: "notification", method: value.method, params: value.params };
  const id = rpcIdSchema.safeParse(value.id);
  if (!id.success) return invalid("id must be a string of at most 128 characters or a safe integer");
  return { kind: "request", id: id.data, method: value.method, params: value.params };
}

/** The id to echo in an error: the message's own id when it is a valid one, else null. */
function echoedId(value: unknown): RpcId | null {
  if (typeof value !== "object" || value === null || !("id" in value)) return null;
  const id = rpcIdSchema.safeParse((value as { id: unknown }).id);
  return id.success ? id.data : null;
}

// ---------------------------------------------------------------------------------------------
// Reading messages loosely (the proxy: it forwards what it does not handle, so it validates nothing)

/** A message as a forwarder sees it: ids of any kind, echoed as they came. */
export type LooseMessage =
  | { kind: "request"; id: unknown; method: string; params: unknown }
  | { kind: "notification"; method: string; params: unknown }
  | { kind: "response"; id: unknown; result: unknown; error: unknown };

/** `undefined` for anything that is not a JSON object with a string `method` or an `id`. */
export function classifyLoose(value: unknown): LooseMessage | undefined {
  if (!isRecord(value)) return undefined;
  if (typeof value.method === "string") {
    return "id" in value
      ? { kind: "request", id: value.id, method: value.method, params: value.params }
      : { kind: "notification", method: value.method, params: value.params };
  }
  if ("id" in value) return { kind: "response", id: value.id, result: value.result, error: value.error };
  return undefined;
}

/** `classifyLoose` of a line of text; `undefined` also for text that is not JSON. */
export function classifyLooseText(text: string): LooseMessage | undefined {
  return classifyLoose(parseJson(text));
}
