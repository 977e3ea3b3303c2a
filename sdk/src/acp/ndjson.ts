/**
 * Newline-delimited JSON-RPC as raw lines: the proxy inspects a copy of each line and forwards the
 * original bytes, so whatever it does not handle reaches the other side exactly as it was written.
 */
import type { Readable, Writable } from "node:stream";
import { parseJson } from "../protocol.js";
import { isRecord } from "../wire.js";

export type Message =
  | { kind: "request"; id: unknown; method: string; params: unknown }
  | { kind: "notification"; method: string; params: unknown }
  | { kind: "response"; id: unknown; result: unknown; error: unknown };

const NEWLINE = 0x0a;

/** Calls `onLine` with each line's bytes (without the newline); a last unterminated line counts too. */
export function readLines(input: Readable, onLine: (line: Buffer) => void, onEnd: () => void): void {
  let pending: Buffer[] = [];
  input.on("data", (chunk: Buffer) => {
    let start = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
      pending.push(chunk.subarray(start, nl));
      onLine(Buffer.concat(pending));
      pending = [];
      start = nl + 1;
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  });
  input.once("end", () => {
    if (pending.length > 0) onLine(Buffer.concat(pending));
    pending = [];
    onEnd();
  });
}

export function writeLine(output: Writable, line: Buffer | string): void {
  if (output.writable) output.write(typeof line === "string" ? `${line}\n` : Buffer.concat([line, Buffer.of(NEWLINE)]));
}

export function writeMessage(output: Writable, message: Record<string, unknown>): void {
  writeLine(output, JSON.stringify({ jsonrpc: "2.0", ...message }));
}

/** `undefined` for anything that is not a JSON-RPC object: such lines are only ever forwarded. */
export function classify(line: Buffer): Message | undefined {
  const msg = parseJson(line.toString("utf8"));
  if (!isRecord(msg)) return undefined;
  if (typeof msg.method === "string") {
    return "id" in msg
      ? { kind: "request", id: msg.id, method: msg.method, params: msg.params }
      : { kind: "notification", method: msg.method, params: msg.params };
  }
  if ("id" in msg) return { kind: "response", id: msg.id, result: msg.result, error: msg.error };
  return undefined;
}

/** Map key for a JSON-RPC id: `1` and `"1"` are different requests. */
export function idKey(id: unknown): string {
  return JSON.stringify(id) ?? "undefined";
}
