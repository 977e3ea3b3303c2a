/**
 * A per-isolate copy of what D1 said, so a request does not wait on D1 for what it read a moment
 * ago. Whoever uses one says how a change made elsewhere reaches it (the team's hub vouches for a
 * cached credential: `auth.ts`, `team/agent-sessions.ts`).
 */

/** Each entry is kept `ttlMs`, by a key (a credential's hash, a key's join of a session); at most 5,000. */
export class IsolateCache<T> {
  private readonly entries = new Map<string, { value: T; until: number }>();

  constructor(private readonly ttlMs: number) {}

  get(key: string, now: number): T | undefined {
    const entry = this.entries.get(key);
    return entry && entry.until > now ? entry.value : undefined;
  }

  /** Keeps `value` (or forgets the key when D1 knew none). */
  set(key: string, value: T | null, now: number): void {
    if (value === null) {
      this.entries.delete(key);
      return;
    }
    if (this.entries.size > 5000) this.entries.clear();
    this.entries.set(key, { value, until: now + this.ttlMs });
  }

  delete(key: string): void {
    this.entries.delete(key);
  }
}
