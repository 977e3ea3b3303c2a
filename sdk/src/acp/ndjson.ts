/**
 * Newline-delimited JSON-RPC as raw lines: the proxy inspects a copy of each line and forwards the
 * original bytes, so whatever it does not handle reaches the other side exactly as it was written.
 * Owns the line splitting and writing; what a line means is `classifyLoose` in `../jsonrpc.ts`.
 */
import type { Readable, Writable } from "node:stream";
import { classifyLooseText, type LooseMessage } from "../jsonrpc.js";

export type { LooseMessage as Message } from "../jsonrpc.js";

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

/** `written` runs once the line has been handed on (or at once when `output` is closed). */
export function writeLine(output: Writable, line: Buffer | string, written?: () => void): void {
  if (!output.writable) {
    written?.();
    return;
  }
  output.write(typeof line === "string" ? `${line}\n` : Buffer.concat([line, Buffer.of(NEWLINE)]), () => written?.());
}

/** One message the proxy writes itself, built with `rpcRequest`, `rpcResult`, … from `../jsonrpc.ts`. */
export function writeMessage(output: Writable, message: { jsonrpc: "2.0" }): void {
  writeLine(output, JSON.stringify(message));
}

/** `undefined` for anything that is not a JSON-RPC object: such lines are only ever forwarded. */
export function classifyLine(line: Buffer): LooseMessage | undefined {
  return classifyLooseText(line.toString("utf8"));
}
