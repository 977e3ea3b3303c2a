/**
 * W3C trace context in ACP `_meta`: the root keys `traceparent`, `tracestate` and `baggage` are
 * reserved for it (ACP extensibility). Tapgate forwards them untouched and shows the trace id on
 * the card, so a reviewer can find the agent's trace. Pure, environment-neutral.
 */

export const TRACE_META_KEYS = ["traceparent", "tracestate", "baggage"] as const;

/** `version-traceid-parentid-flags` (W3C Trace Context §3.2); version ff and all-zero ids are invalid. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The trace id of a `_meta.traceparent`, or null when there is none or it is malformed. */
export function traceIdOf(meta: unknown): string | null {
  const traceparent = meta && typeof meta === "object" ? (meta as Record<string, unknown>).traceparent : undefined;
  const m = typeof traceparent === "string" ? TRACEPARENT.exec(traceparent.trim()) : null;
  if (!m) return null;
  const [, version, traceId = "", parentId = "", , rest] = m;
  if (version === "ff" || (version === "00" && rest) || /^0+$/.test(traceId) || /^0+$/.test(parentId)) return null;
  return traceId;
}
