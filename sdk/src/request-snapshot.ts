/**
 * The pieces of a request's snapshot (what a card shows, what `requestHash` covers) that the gate
 * (`worker/gate/rules.ts`, `elicitation.ts`) and the SDK's sealing (`private/seal-params.ts`)
 * must build alike: fields without nulls, and an ACP v2 request's own prompt and subject.
 *
 * Owns: those two helpers. Does not own: the snapshot's schema (`approval.ts`). Pure and
 * environment-neutral.
 */
import type { RequestPermissionParams } from "./protocol.js";

export function withoutNullish<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null && v !== undefined)) as Partial<T>;
}

/** An ACP v2 request's own prompt and subject, stored as sent beside the card's derived tool call. */
export function v2Fields(params: RequestPermissionParams): { permission?: { title: string; [k: string]: unknown } } {
  const { title, description, subject } = params as { title?: unknown; description?: unknown; subject?: unknown };
  if (typeof title !== "string") return {};
  return { permission: { title, ...(description != null && { description }), ...(subject != null && { subject }) } };
}
