/**
 * The pending list, shared by the Pending screen and the nav badge: loaded from the API, kept
 * current by live events, reloaded after every reconnect. Events that arrive while a reload is
 * in flight are replayed over its answer, so a slow reload cannot resurrect a resolved card.
 */
import { useEffect, useState } from "preact/hooks";
import { type ApiError, api, type PendingApproval } from "./api";
import { type LiveEvent, live } from "./live";

export interface PendingState {
  mine: PendingApproval[];
  team: PendingApproval[];
  loaded: boolean;
  error: ApiError | null;
}

const LIMIT = 200;

class PendingStore {
  state: PendingState = { mine: [], team: [], loaded: false, error: null };
  private byId = new Map<string, PendingApproval>();
  private mineIds = new Set<string>();
  private userId: string | null = null;
  private unsubscribe: (() => void) | null = null;
  private inFlight: LiveEvent[] | null = null;
  private readonly listeners = new Set<(s: PendingState) => void>();

  start(userId: string): void {
    if (this.userId === userId) return;
    this.stop();
    this.userId = userId;
    this.unsubscribe = live.onEvent((e) => this.onEvent(e));
    void this.reload();
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.userId = null;
    this.inFlight = null;
    this.byId.clear();
    this.mineIds.clear();
    this.publish({ loaded: false, error: null });
  }

  subscribe(fn: (s: PendingState) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  async reload(): Promise<void> {
    const buffered: LiveEvent[] = [];
    this.inFlight = buffered;
    try {
      const [mine, team] = await Promise.all([
        api.approvals({ state: "pending", scope: "mine", limit: LIMIT }),
        api.approvals({ state: "pending", scope: "team", limit: LIMIT }),
      ]);
      if (this.inFlight !== buffered) return;
      this.byId = new Map([...team.approvals, ...mine.approvals].map((a) => [a.id, a]));
      this.mineIds = new Set(mine.approvals.map((a) => a.id));
      for (const e of buffered) this.apply(e);
      this.publish({ loaded: true, error: null });
    } catch (e) {
      if (this.inFlight === buffered) this.publish({ error: e as ApiError });
    } finally {
      if (this.inFlight === buffered) this.inFlight = null;
    }
  }

  private onEvent(e: LiveEvent): void {
    if (e.type === "resync") {
      void this.reload();
      return;
    }
    if (e.type === "session" || e.type === "claimed") return;
    this.inFlight?.push(e);
    this.apply(e);
    this.publish({});
  }

  private apply(e: LiveEvent): void {
    if (e.type === "withdrawn") this.byId.delete(e.approvalId);
    if (e.type !== "approval" && e.type !== "resolved") return;
    const a = e.approval;
    if (e.type === "approval" && a.state === "pending") {
      this.byId.set(a.id, a);
      if (a.owner.userId === this.userId) this.mineIds.add(a.id);
    } else {
      this.byId.delete(a.id);
    }
  }

  private publish(patch: Partial<PendingState>): void {
    // Most urgent first within each group: the one expiring soonest.
    const all = [...this.byId.values()].sort((x, y) => x.expiresAt - y.expiresAt);
    this.state = {
      ...this.state,
      ...patch,
      mine: all.filter((a) => this.mineIds.has(a.id)),
      team: all.filter((a) => !this.mineIds.has(a.id)),
    };
    for (const fn of this.listeners) fn(this.state);
  }
}

export const pending = new PendingStore();

export function usePending(): PendingState {
  const [state, setState] = useState(pending.state);
  useEffect(() => {
    setState(pending.state);
    return pending.subscribe(setState);
  }, []);
  return state;
}
