/**
 * Finding a key that appears twice in one JSON object. `JSON.parse` keeps the last of two
 * duplicates without a word, while other parsers keep the first: an agent could send a frame
 * that the gate reads one way and a log, a proxy or a human's tool reads another. So the gate
 * refuses such frames on both transports (agent-protocol.md, "Framing").
 *
 * Owns: the scan. Does not own: parsing (the caller ran `JSON.parse` on the same text first and
 * only calls this for text it accepted), nor what a refusal answers (`jsonrpc.ts`, the HTTP
 * route). Linear in the text and iterative (an explicit stack), so hostile depth cannot
 * overflow the stack; keys are compared decoded, so `{"a":1,"\u0061":2}` is a duplicate.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

/** A key seen twice in one object, and how deep that object is (a top-level object is 1). */
export interface DuplicateKey {
  key: string;
  depth: number;
}

/** The first duplicated key in `text` (JSON that `JSON.parse` accepted), or null when none. */
export function findDuplicateKey(text: string): DuplicateKey | null {
  // One entry per open container: the keys an object has so far, null for an array.
  const open: Array<Set<string> | null> = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = closingQuote(text, i);
      if (expectKey) {
        const keys = open[open.length - 1] as Set<string>;
        const key = decodeString(text, i, end);
        if (keys.has(key)) return { key, depth: open.length };
        keys.add(key);
        expectKey = false;
      }
      i = end;
    } else if (c === OPEN_OBJECT) {
      open.push(new Set());
      expectKey = true;
    } else if (c === OPEN_ARRAY) {
      open.push(null);
      expectKey = false;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      open.pop();
      expectKey = false;
    } else if (c === COMMA) {
      expectKey = open[open.length - 1] instanceof Set;
    }
  }
  return null;
}

/** The refusal's message, the same on every transport; a long key is cut to 100 characters. */
export function duplicateKeyMessage(d: DuplicateKey): string {
  return `duplicate key ${JSON.stringify(d.key.slice(0, 100))} in a JSON object`;
}

/** The index of the quote that closes the string opening at `start`. */
function closingQuote(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH) i++;
    else if (c === QUOTE) return i;
  }
  return text.length;
}

/** The string literal from `start` to `end` (both quotes), decoded; no escapes is the fast path. */
function decodeString(text: string, start: number, end: number): string {
  const raw = text.slice(start + 1, end);
  if (!raw.includes("\\")) return raw;
  try {
    return JSON.parse(text.slice(start, end + 1)) as string;
  } catch {
    return raw;
  }
}
