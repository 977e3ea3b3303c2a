/**
 * What a screen shows of an approval: a standard one as it is; a private one as this device
 * opened it (the agent's words) or, until and unless it opened, nothing of its content. Each
 * sealed request is opened once per key and remembered for the page's life; every screen that
 * shows approvals reads them through here.
 *
 * Owns: that cache and the hooks. Does not own: the opening and its checks (open.ts).
 */
import { useEffect, useState } from "preact/hooks";
import type { Approval } from "../../../sdk/src/approval";
import { useMe } from "../viewer";
import { useDeviceKey } from "./device-key";
import type { StoredDeviceKey } from "./key-store";
import { asAsked, openWithKeys, type PrivateOutcome } from "./open";

/** `null`: a standard request; `opening`: this device is still opening it (or loading its key). */
export type PrivateState = null | "opening" | PrivateOutcome["state"];

/** An approval as a screen may show it: with `private` other than null/opened, show none of its content. */
export interface Seen<A> {
  approval: A;
  private: PrivateState;
}

const outcomes = new Map<string, PrivateOutcome | "opening">();
const listeners = new Set<() => void>();

function cacheKey(a: Approval, keys: readonly StoredDeviceKey[]): string {
  const offered = a.options.map((o) => [o.optionId, o.kind]);
  return JSON.stringify([a.id, a.requestHash, a.sealed, offered, keys.map((k) => k.deviceId)]);
}

function outcomeOf(a: Approval, keys: readonly StoredDeviceKey[]): PrivateOutcome | "opening" {
  const k = cacheKey(a, keys);
  const known = outcomes.get(k);
  if (known) return known;
  outcomes.set(k, "opening");
  void openWithKeys(a, keys)
    .catch((): PrivateOutcome => ({ state: "altered" }))
    .then((o) => {
      outcomes.set(k, o);
      for (const l of listeners) l();
    });
  return "opening";
}

/** What to show of `a`, with this browser's keys (null while they load). */
export function seenWith<A extends Approval>(a: A, keys: readonly StoredDeviceKey[] | null): Seen<A> {
  if (!a.sealed) return { approval: a, private: null };
  if (!keys) return { approval: a, private: "opening" };
  const o = outcomeOf(a, keys);
  if (o === "opening") return { approval: a, private: "opening" };
  return o.state === "opened"
    ? { approval: asAsked(a, o.plaintext), private: "opened" }
    : { approval: a, private: o.state };
}

/** The approvals as this device may show them; re-renders as each private one opens. */
export function useSeen<A extends Approval>(approvals: readonly A[]): Seen<A>[] {
  const key = useDeviceKey(useMe());
  const [, setTick] = useState(0);
  useEffect(() => {
    const l = () => setTick((n) => n + 1);
    listeners.add(l);
    // An opening that ended between this render and now told no one: render once more.
    l();
    return () => void listeners.delete(l);
  }, []);
  const keys = key.loaded ? (key.key ? [key.key] : []) : null;
  return approvals.map((a) => seenWith(a, keys));
}

export function useSeenOne<A extends Approval>(approval: A): Seen<A> {
  return useSeen([approval])[0] as Seen<A>;
}

/** Whether a screen may show this approval's content (and allow it): standard, or private and opened. */
export const readable = (s: { private: PrivateState }) => s.private === null || s.private === "opened";
