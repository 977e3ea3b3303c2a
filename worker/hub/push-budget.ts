/**
 * Push fatigue, per person: each recipient device gets at most PUSHES_PER_WINDOW pushes per
 * window, counted across all of the team's sessions; past that, one summary per device per
 * window (how many of the requests sent its way still wait), then silence. So 500 looping
 * sessions cannot bury an approver's phone in 5,000 notifications.
 *
 * Owns: the budget rule (`pushDecision`, pure, unit-tested in `push-budget.test.ts`) and its
 * bookkeeping in the hub's `push_budget` (which requests went to which device, pushed, pushed
 * again by an escalation, or held back) and `push_summaries` (each device's last summary). Does not own: what a push says or
 * sending it (`push-queue.ts`, `web-push.ts`), or which devices a request goes to
 * (`directory.ts`).
 */
import type { HubHost } from "./host";

export const PUSHES_PER_WINDOW = 10;
export const PUSH_WINDOW_MS = 10 * 60 * 1000;

/** "approval": push this request · "summary": the budget is spent, one summary · "none": silence. */
export type BudgetDecision = "approval" | "summary" | "none";

/** What a device gets for a new request, given its pushes in the window and its last summary. */
export function pushDecision(b: { sent: number; summaryAt: number; now: number }): BudgetDecision {
  if (b.sent < PUSHES_PER_WINDOW) return "approval";
  return b.summaryAt > b.now - PUSH_WINDOW_MS ? "none" : "summary";
}

/** A device's share of one request: null when the request was already counted for it (a replay). */
export type DeviceSpend = { kind: "approval" } | { kind: "summary"; waiting: number } | { kind: "none" } | null;

export class PushBudget {
  constructor(private readonly host: HubHost) {}

  /** Spends from the device's budget for a request opened at `now`. */
  spend(deviceId: string, approvalId: string, now: number): DeviceSpend {
    const { sql } = this.host;
    const logged = sql
      .exec(
        `INSERT INTO push_budget (device_id, approval_id, at, pushed) VALUES (?, ?, ?, 0)
         ON CONFLICT DO NOTHING RETURNING device_id`,
        deviceId,
        approvalId,
        now,
      )
      .toArray();
    if (logged.length === 0) return null;
    const sent = this.sentInWindow(deviceId, now);
    const summaryAt =
      (sql.exec("SELECT at FROM push_summaries WHERE device_id = ?", deviceId).toArray()[0]?.at as
        | number
        | undefined) ?? 0;
    const decision = pushDecision({ sent, summaryAt, now });
    if (decision === "approval") {
      sql.exec("UPDATE push_budget SET pushed = 1 WHERE device_id = ? AND approval_id = ?", deviceId, approvalId);
      return { kind: "approval" };
    }
    if (decision === "none") return { kind: "none" };
    sql.exec("INSERT OR REPLACE INTO push_summaries (device_id, at) VALUES (?, ?)", deviceId, now);
    return { kind: "summary", waiting: this.waiting(deviceId) };
  }

  /**
   * An escalation's repeat push of a request this device was pushed (`pushed` 1 → 2): it spends
   * from the same budget as a new request, so a device never gets more than PUSHES_PER_WINDOW
   * notifications per window. False when the device was not pushed the request, was already
   * pushed it again, or its budget is spent (its summary already told it).
   */
  spendRepeat(deviceId: string, approvalId: string, now: number): boolean {
    if (this.sentInWindow(deviceId, now) >= PUSHES_PER_WINDOW) return false;
    return (
      this.host.sql
        .exec(
          "UPDATE push_budget SET pushed = 2 WHERE device_id = ? AND approval_id = ? AND pushed = 1 RETURNING device_id",
          deviceId,
          approvalId,
        )
        .toArray().length > 0
    );
  }

  /** Pushes to the device in the window: each request pushed counts 1, and its repeat 1 more. */
  private sentInWindow(deviceId: string, now: number): number {
    return this.host.sql
      .exec(
        "SELECT COALESCE(SUM(pushed), 0) AS n FROM push_budget WHERE device_id = ? AND pushed > 0 AND at > ?",
        deviceId,
        now - PUSH_WINDOW_MS,
      )
      .one().n as number;
  }

  /** A removed device's budget goes with it. */
  forgetDevice(deviceId: string): void {
    this.host.sql.exec("DELETE FROM push_budget WHERE device_id = ?", deviceId);
    this.host.sql.exec("DELETE FROM push_summaries WHERE device_id = ?", deviceId);
  }

  /**
   * Forgets what no longer counts: entries older than the window whose request no longer waits
   * (resolved, or forgotten by the feed), and summaries older than the window. Bounded by the
   * requests still pending times their devices.
   */
  prune(now: number): void {
    const before = now - PUSH_WINDOW_MS;
    this.host.sql.exec(
      `DELETE FROM push_budget WHERE at <= ? AND NOT EXISTS
         (SELECT 1 FROM approvals a WHERE a.id = push_budget.approval_id AND a.state = 'pending')`,
      before,
    );
    this.host.sql.exec("DELETE FROM push_summaries WHERE at <= ?", before);
  }

  /** The requests sent this device's way (pushed or held back) that still wait. */
  private waiting(deviceId: string): number {
    return this.host.sql
      .exec(
        `SELECT COUNT(*) AS n FROM push_budget b JOIN approvals a ON a.id = b.approval_id
          WHERE b.device_id = ? AND a.state = 'pending'`,
        deviceId,
      )
      .one().n as number;
  }
}
