/**
 * What is stored of a request: its snapshot cut to the team's `limits.storedBytesPerRequest`,
 * with a `truncated: {bytesNotStored}` marker that cards show. The cut keeps the snapshot's
 * shape (so cards still render it): long strings are shortened, all to the same length, the
 * longest that fits; when even that cannot fit (a huge array of short strings), the tool call
 * keeps only its id, title and kind. The approval's `requestHash` is computed over the whole
 * snapshot before the cut (rules.ts), so it still covers what the agent sent.
 *
 * Owns: the cut. Pure, no I/O: stored-snapshot.test.ts runs under Node.
 */
import type { ApprovalSnapshot } from "../../sdk/src/approval";

/** Room kept for the marker itself (`,"truncated":{"bytesNotStored":N}`). */
const MARKER_BYTES = 48;
/** Never cut: the tool call's identity. */
const KEPT_KEYS = new Set(["toolCallId"]);
const ELLIPSIS = "…";

const encoder = new TextEncoder();
export const jsonBytes = (value: unknown) => encoder.encode(JSON.stringify(value)).length;

/** The snapshot as stored: itself when it fits in `maxBytes`, else cut, with the marker. */
export function storedSnapshot(snapshot: ApprovalSnapshot, maxBytes: number): ApprovalSnapshot {
  const fullBytes = jsonBytes(snapshot);
  if (fullBytes <= maxBytes) return snapshot;
  const budget = maxBytes - MARKER_BYTES;
  const cut = longestFit(snapshot, budget) ?? longestFit(bare(snapshot), budget) ?? minimal(snapshot);
  return { ...cut, truncated: { bytesNotStored: Math.max(1, fullBytes - jsonBytes(cut)) } };
}

/** The snapshot with every string cut to the longest common length that fits, or null. */
function longestFit(snapshot: ApprovalSnapshot, budget: number): ApprovalSnapshot | null {
  let lo = 0;
  let hi = longestString(snapshot);
  let best: ApprovalSnapshot | null = null;
  while (lo <= hi) {
    const mid = Math.floor((lo + hi) / 2);
    const candidate = cutStrings(snapshot, mid) as ApprovalSnapshot;
    if (jsonBytes(candidate) <= budget) {
      best = candidate;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return best;
}

/** The tool call's id, title and kind, and the session: what a card needs to say what asks. */
function bare(snapshot: ApprovalSnapshot): ApprovalSnapshot {
  const { toolCallId, title, kind } = snapshot.toolCall as { toolCallId: string; title?: unknown; kind?: unknown };
  return { toolCall: { toolCallId, title, kind }, session: snapshot.session };
}

function minimal(snapshot: ApprovalSnapshot): ApprovalSnapshot {
  return {
    toolCall: { toolCallId: snapshot.toolCall.toolCallId },
    session: { title: null, agent: null, host: null, cwd: null },
  };
}

function longestString(value: unknown): number {
  if (typeof value === "string") return value.length;
  if (value === null || typeof value !== "object") return 0;
  let longest = 0;
  for (const v of Object.values(value)) longest = Math.max(longest, longestString(v));
  return longest;
}

/** A copy with strings longer than `max` characters cut to `max` and an ellipsis. */
function cutStrings(value: unknown, max: number, key?: string): unknown {
  if (typeof value === "string") return key !== undefined && KEPT_KEYS.has(key) ? value : cutString(value, max);
  if (Array.isArray(value)) return value.map((v) => cutStrings(v, max));
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cutStrings(v, max, k)]));
}

function cutString(s: string, max: number): string {
  if (s.length <= max) return s;
  // Never split a surrogate pair.
  const end = max > 0 && /[\uD800-\uDBFF]/.test(s.charAt(max - 1)) ? max - 1 : max;
  return s.slice(0, end) + ELLIPSIS;
}
