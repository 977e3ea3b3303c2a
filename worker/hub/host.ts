/**
 * The narrow host a TeamHub lends its subsystems (as cloudflare/agents' `AgentStateHost`): its
 * SQLite, its bindings, its team, its sockets and its alarm — and nothing of the platform's
 * entry points, so a subsystem cannot answer a request or an alarm itself.
 *
 * Owns: the interface and its one implementation over the object's state (`hubHost`). Does not
 * own: the team (`hub-team.ts`) or any subsystem.
 */
import type { Env } from "../types";

export interface HubHost {
  /** The hub's own SQLite (schema in `migrations.ts`). */
  readonly sql: SqlStorage;
  /** D1, the VAPID keys, the SessionGate namespace. */
  readonly env: Env;
  /** Where the app is, for links that leave the hub (a mail, a push's notification). */
  readonly appOrigin: string;
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

/** The host over a TeamHub's state; `teamId` reads the hub's team. */
export function hubHost(ctx: DurableObjectState, env: Env, teamId: () => string | null): HubHost {
  return {
    sql: ctx.storage.sql,
    env,
    // Local mode without APP_ORIGIN: the dev server's address.
    appOrigin: env.APP_ORIGIN ?? "http://localhost:8787",
    teamId,
    sockets: (tag) => ctx.getWebSockets(tag),
    accept: (ws, tags) => ctx.acceptWebSocket(ws, tags),
    // Only ever earlier: the alarm is shared. (While the alarm runs, getAlarm answers null.)
    setAlarm: async (at) => {
      const set = await ctx.storage.getAlarm();
      if (set === null || set > at) await ctx.storage.setAlarm(at);
    },
  };
}
