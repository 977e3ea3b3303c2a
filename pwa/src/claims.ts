/**
 * Who is looking at which pending request ("Ada is looking"), from the live feed's `claimed`
 * events (the hub also replays the running ones to every socket that joins). A claim shows until
 * its `until` or until its request ends; it is never a lock, so nothing here blocks a decision.
 *
 * Owns: the claims the browser knows of and the words for them. Does not own: taking a claim
 * (the card calls `api.claim`), or the feed itself (`live.ts`).
 */
import { useEffect, useState } from "preact/hooks";
import type { Claim } from "./api";
import { useNow } from "./clock";
import { live } from "./live";

/** approval id → user id → that person's latest claim. */
const claims = new Map<string, Map<string, Claim>>();
const listeners = new Set<() => void>();

live.onEvent((e) => {
  if (e.type === "claimed") {
    const { type: _, ...claim } = e;
    claims.set(claim.approvalId, new Map(claims.get(claim.approvalId)).set(claim.by.userId, claim));
  } else if (e.type === "resolved") {
    claims.delete(e.approval.id);
  } else if (e.type === "withdrawn") {
    claims.delete(e.approvalId);
  } else return;
  for (const fn of listeners) fn();
});

/** The people other than `me` looking at a request now, latest claim first. */
export function useLookers(approvalId: string, me: string | undefined): Claim[] {
  const now = useNow();
  const [, changed] = useState(0);
  useEffect(() => {
    const fn = () => changed((n) => n + 1);
    listeners.add(fn);
    return () => listeners.delete(fn);
  }, []);
  return [...(claims.get(approvalId)?.values() ?? [])]
    .filter((c) => c.until > now && c.by.userId !== me)
    .sort((a, b) => b.until - a.until);
}

/** "Ada is looking", "Ada and Sam are looking", "Ada, Sam and 2 others are looking" (for one or more). */
export function lookingWords(lookers: Claim[]): string {
  const [first, second, ...rest] = lookers.map((c) => c.by.name || "Someone");
  if (second === undefined) return `${first} is looking`;
  if (rest.length === 0) return `${first} and ${second} are looking`;
  return `${first}, ${second} and ${rest.length} other${rest.length === 1 ? "" : "s"} are looking`;
}
