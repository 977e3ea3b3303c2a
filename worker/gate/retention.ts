/**
 * What a gate forgets, and when: resolved rows past the team's `limits.retentionDays`, then past
 * the cap on count and bytes (`resolved-cap.ts`), and revoked keys past their memory.
 *
 * Owns: the retention window and the prune step the alarm's sweep runs. Does not own: the
 * statements (store.ts, resolved-cap.ts), the ladders of pruned rows (the host's
 * `prunedResolved`) or the alarm (the shell).
 */
import { DEFAULT_POLICY, limitsOf } from "../policy";
import type { ResolvedCap } from "./resolved-cap";
import { type GateStore, REVOKED_KEY_MEMORY_MS } from "./store";

const DAY_MS = 24 * 60 * 60 * 1000;

export interface RetentionHost {
  store: GateStore;
  cap: ResolvedCap;
  /** Some resolved rows were pruned: their ladders go too. */
  prunedResolved(): void;
}

export class Retention {
  constructor(private readonly host: RetentionHost) {}

  /** Resolved rows past retention, then past the cap (count and bytes); old revoked keys. */
  prune(now: number): void {
    const { store, cap } = this.host;
    store.pruneRevokedBefore(now - REVOKED_KEY_MEMORY_MS);
    const pruned = store.pruneResolvedBefore(now - this.retentionMs()) + (cap.due() ? cap.enforce() : 0);
    if (pruned > 0) this.host.prunedResolved();
  }

  /** When the oldest resolved row passes retention (null: none kept), and now if the cap presses. */
  dueAt(now: number): number | null {
    if (this.host.cap.pressing()) return now;
    const oldest = this.host.store.oldestResolvedExpiry();
    return oldest === null ? null : oldest + this.retentionMs();
  }

  /** How long resolved rows are kept: the team's `limits.retentionDays`. */
  private retentionMs(): number {
    const meta = this.host.store.meta();
    return limitsOf(meta?.policy ?? DEFAULT_POLICY).retentionDays * DAY_MS;
  }
}
