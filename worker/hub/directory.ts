/**
 * The hub's copy of its team's directory: devices, roles and names, loaded from D1 on first use
 * and dropped when members, roles or devices change, so the path from an agent's request to a
 * push touches D1 at most once per DIRECTORY_MAX_AGE_MS: a change whose notice the hub missed
 * (a removed device, a removed member) is pushed to no longer than that.
 *
 * Owns: the `devices`, `members` and `people` tables and `meta('directory')` (when the copy was
 * read). Does not own:
 * the push queue (a removed device's queued pushes are `push-queue.ts`'s), D1's devices (the
 * routes and `db/devices.ts`), or who decides (the gate).
 */

import type { EscalationStep } from "../../sdk/src/human/policy";
import type { Role } from "../../sdk/src/human/roles";
import { listTeamDirectory } from "../db";
import { DECIDER_ROLES } from "../roles";
import type { ApprovalNews, HubDevice } from "./api";
import type { HubHost } from "./host";

/** How old the copy may be when a request's pushes are addressed from it (`refresh`). */
export const DIRECTORY_MAX_AGE_MS = 30_000;

export class Directory {
  /** Bumped by every `forget`, so a read from D1 that a change overtook is not kept as current. */
  private generation = 0;
  /** The read from D1 on its way: callers meanwhile wait for it rather than each reading D1 (single flight). */
  private loading: Promise<void> | null = null;

  constructor(private readonly host: HubHost) {}

  /** Whether the copy was read and nothing changed since (names can be shown without D1). */
  current(): boolean {
    return this.host.sql.exec("SELECT 1 FROM meta WHERE k = 'directory'").toArray().length > 0;
  }

  /** Reads devices and members from D1 unless the copy is current (and, with `maxAgeMs`, read that recently). */
  async load(maxAgeMs = Number.POSITIVE_INFINITY): Promise<void> {
    const { sql } = this.host;
    const readAt = sql.exec("SELECT v FROM meta WHERE k = 'directory'").toArray()[0]?.v;
    if (readAt !== undefined && Date.now() - Number(readAt) <= maxAgeMs) return;
    const teamId = this.host.teamId();
    if (!teamId) return;
    this.loading ??= this.read(teamId).finally(() => {
      this.loading = null;
    });
    return this.loading;
  }

  /**
   * Reads the copy again when it is older than `maxAgeMs`, for a caller that must go on (a
   * request's pushes): when D1 cannot be read, the older copy serves, and the failure is logged.
   * Without any copy it fails as `load` does.
   */
  async refresh(maxAgeMs: number): Promise<void> {
    if (!this.current()) return this.load();
    await this.load(maxAgeMs).catch((error: unknown) => {
      console.error(`directory: D1 could not be read again, the older copy serves: ${String(error).slice(0, 200)}`);
    });
  }

  private async read(teamId: string): Promise<void> {
    let generation: number;
    let directory: Awaited<ReturnType<typeof listTeamDirectory>>;
    do {
      generation = this.generation;
      directory = await listTeamDirectory(this.host.env.DB, teamId);
    } while (generation !== this.generation);
    this.replace(directory);
  }

  private replace({ devices, members }: Awaited<ReturnType<typeof listTeamDirectory>>): void {
    const { sql } = this.host;
    sql.exec("DELETE FROM devices");
    sql.exec("DELETE FROM members");
    for (const d of devices) {
      sql.exec(
        "INSERT INTO devices (id, user_id, name, endpoint, p256dh, auth) VALUES (?, ?, ?, ?, ?, ?)",
        d.id,
        d.userId,
        d.name,
        d.endpoint,
        d.p256dh,
        d.auth,
      );
    }
    sql.exec("DELETE FROM people");
    for (const m of members) {
      sql.exec("INSERT INTO members (user_id, role) VALUES (?, ?)", m.userId, m.role);
      sql.exec("INSERT INTO people (user_id, name) VALUES (?, ?)", m.userId, m.name);
    }
    sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('directory', ?)", String(Date.now()));
  }

  /** Members or roles changed: read them again from D1 on next use. */
  forget(): void {
    this.generation++;
    this.host.sql.exec("DELETE FROM meta WHERE k = 'directory'");
  }

  saveDevice(device: HubDevice): void {
    this.host.sql.exec(
      "INSERT OR REPLACE INTO devices (id, user_id, name, endpoint, p256dh, auth) VALUES (?, ?, ?, ?, ?, ?)",
      device.id,
      device.userId,
      device.name,
      device.endpoint,
      device.p256dh,
      device.auth,
    );
  }

  removeDevice(deviceId: string): void {
    this.host.sql.exec("DELETE FROM devices WHERE id = ?", deviceId);
  }

  device(deviceId: string): HubDevice | null {
    const row = this.host.sql.exec("SELECT * FROM devices WHERE id = ?", deviceId).toArray()[0];
    return row ? toDevice(row) : null;
  }

  isDeviceOf(deviceId: string, userId: string): boolean {
    return (
      this.host.sql.exec("SELECT 1 FROM devices WHERE id = ? AND user_id = ?", deviceId, userId).toArray().length > 0
    );
  }

  /** A member's display name; "" when the directory does not know them. */
  nameOf(userId: string): string {
    const row = this.host.sql.exec("SELECT name FROM people WHERE user_id = ?", userId).toArray()[0];
    return (row?.name as string | undefined) ?? "";
  }

  /**
   * The members an escalation step is for: the session's owner, every member with a deciding
   * role, or the members named (those still in the team), in that order.
   */
  peopleFor(to: EscalationStep["to"], ownerUserId: string): string[] {
    const { sql } = this.host;
    if (to === "session_owner") return [ownerUserId];
    const rows =
      to === "all_approvers"
        ? sql.exec(
            `SELECT user_id FROM members WHERE role IN (${DECIDER_ROLES.map(() => "?").join(", ")}) ORDER BY user_id`,
            ...DECIDER_ROLES,
          )
        : sql.exec(`SELECT user_id FROM members WHERE user_id IN (${to.map(() => "?").join(", ")})`, ...to);
    const ids = rows.toArray().map((r) => r.user_id as string);
    return Array.isArray(to) ? to.filter((id) => ids.includes(id)) : ids;
  }

  devicesOf(userId: string): HubDevice[] {
    return this.host.sql.exec("SELECT * FROM devices WHERE user_id = ? ORDER BY name", userId).toArray().map(toDevice);
  }

  /** The member's role in the team, or null for someone who is not a member. */
  roleOf(userId: string): Role | null {
    const row = this.host.sql.exec("SELECT role FROM members WHERE user_id = ?", userId).toArray()[0];
    return row ? (row.role as Role) : null;
  }

  /** Whether the member may decide requests (their seeing one stops its escalation). */
  isDecider(userId: string): boolean {
    const role = this.roleOf(userId);
    return role !== null && DECIDER_ROLES.includes(role);
  }

  /** The devices a request's push goes to: its session owner's, or every decider's. */
  recipients(news: ApprovalNews): HubDevice[] {
    const { sql } = this.host;
    const query =
      news.recipients === "session_owner"
        ? sql.exec("SELECT * FROM devices WHERE user_id = ?", news.ownerUserId)
        : sql.exec(
            `SELECT d.* FROM devices d JOIN members m ON m.user_id = d.user_id
              WHERE m.role IN (${DECIDER_ROLES.map(() => "?").join(", ")})`,
            ...DECIDER_ROLES,
          );
    return query.toArray().map(toDevice);
  }
}

function toDevice(r: Record<string, SqlStorageValue>): HubDevice {
  return {
    id: r.id as string,
    userId: r.user_id as string,
    name: r.name as string,
    endpoint: r.endpoint as string,
    p256dh: r.p256dh as string,
    auth: r.auth as string,
  };
}
