/**
 * What the SDK reads from and adds to an agent's `session/request_permission` params before they
 * go out: the options it offered (to answer fail-closed), a shorter lifetime in `_meta.tapgate`,
 * and validation problems described without echoing values. Does not own the schemas
 * (`protocol.ts`) or the framing (`jsonrpc.ts`).
 */
import { isRecord } from "./jsonrpc.js";
import { tapgateMetaSchema } from "./protocol.js";

export type OptionRef = { optionId: string; kind: string };

const serverTimeoutMs = tapgateMetaSchema.shape.timeoutMs.unwrap();

/** Merges into `_meta` so the agent's other keys survive, clamped to what the gate accepts. */
export function withTimeoutMeta<T extends { _meta?: Record<string, unknown> | null }>(params: T, timeoutMs: number): T {
  const meta = isRecord(params._meta) ? params._meta : {};
  const tapgate = isRecord(meta.tapgate) ? meta.tapgate : {};
  const min = serverTimeoutMs.minValue ?? 1000;
  const clamped = Math.min(serverTimeoutMs.maxValue ?? Number.MAX_SAFE_INTEGER, Math.max(min, Math.ceil(timeoutMs)));
  return { ...params, _meta: { ...meta, tapgate: { ...tapgate, timeoutMs: clamped } } };
}

/** Tolerates invalid params, so even a request refused locally can select the reject it offered. */
export function agentOptionsOf(params: unknown): OptionRef[] {
  const options = isRecord(params) && Array.isArray(params.options) ? params.options : [];
  return options.filter(
    (o): o is OptionRef => isRecord(o) && typeof o.optionId === "string" && typeof o.kind === "string",
  );
}

/** Issue paths only: the input values a message could echo may be tool arguments. */
export function describeIssues(error: { issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey> }> }): string {
  const paths = error.issues.map((i) => i.path.map(String).join(".") || "(root)");
  return `invalid at ${[...new Set(paths)].slice(0, 5).join(", ")}`;
}
