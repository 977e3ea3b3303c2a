/**
 * The narrow host a TeamHub lends its subsystems (as cloudflare/agents' `AgentStateHost`): its
 * SQLite, its bindings, its team, its sockets and its alarm — and nothing of the platform's
 * entry points, so a subsystem cannot answer a request or an alarm itself.
 *
 * Owns: the interface. Does not own: its implementation (the shell, `team-hub.ts`).
 */
import type { Env } from "../types";

export interface HubHost {
  /** The hub's own SQLite (schema in `migrations.ts`). */
  readonly sql: SqlStorage;
  /** D1, the VAPID keys, the SessionGate namespace. */
  readonly env: Env;
  /** The team this hub serves, once any caller named it; null in a hub never called by name. */
  teamId(): string | null;
  /** The hub's accepted WebSockets, all of them or those carrying `tag`. */
  sockets(tag?: string): WebSocket[];
  /** Accepts a hibernatable WebSocket with these tags. */
  accept(ws: WebSocket, tags: string[]): void;
  /**
   * Wakes the hub's alarm no later than `at` (ms since the epoch): an alarm already set earlier
   * stays, since several subsystems share it and each asks again when it runs.
   */
  setAlarm(at: number): Promise<void>;
}
