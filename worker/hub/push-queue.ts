/**
 * Pushes to the team's devices, with retries: a queue in the hub's SQLite that `drain` sends
 * from (on news, and from the hub's alarm), with backoff until a message would be too late, and
 * the per-device delivery record of each request (sent, delivered, failed, and the service
 * worker's receipts: received, displayed, opened, seen).
 *
 * Owns: the `push_queue` and `deliveries` tables, the claim that keeps a job from being sent
 * twice, backoff, and the alarm time it needs. Does not own: the per-device push budget
 * (`push-budget.ts`, asked for each device), the 7-day shown ÷ sent counters (`shown-counts.ts`,
 * told of each delivery's first send and first shown receipt), what a push says or how it is sent
 * (`web-push.ts`), which devices exist (`directory.ts`), showing deliveries live (the feed, told
 * through `onDelivery`), or forgetting a gone device everywhere (the shell, told through `onGone`).
 * What each piece of news pushes is `news-push.ts`; the exported functions above the class are pure
 * and unit-tested (`push-queue.test.ts`).
 */
import type { Approval, Delivery } from "../../sdk/src/approval";
import type { ApprovalNews, DisplayReport, HubDevice, ReceiptEvent } from "./api";
import type { Directory } from "./directory";
import type { HubHost } from "./host";
import { approvalPush, resolvedPayload, summaryPush, type Urgency } from "./news-push";
import { PushBudget } from "./push-budget";
import { dayOf, ShownCounts } from "./shown-counts";
import { type PushPayload, pushMessage, pushTopic, sendPush, type VapidKeys } from "./web-push";

const RETRY_BASE_MS = 1_000;
const RETRY_MAX_MS = 60_000;
/** The most pushes one drain sends (each a subrequest): a burst is spread over alarm turns. */
export const DRAIN_PER_TURN = 50;
/** Longer than a push request may take (10 s timeout), so a claimed job is never sent twice. */
export const SEND_CLAIM_MS = 30_000;
/** How long a "resolved" message may wait to close a notification. */
const RESOLVED_TTL_S = 24 * 60 * 60;
const TEST_TTL_MS = 60_000;
/** The delivery column each service-worker receipt sets. */
const RECEIPT_COLUMNS: Record<ReceiptEvent, string> = {
  received: "received_at",
  displayed: "displayed_at",
  opened: "opened_at",
};

/** The wait before attempt `attempts + 1`: doubling from 2 s, at most a minute. */
export function retryDelayMs(attempts: number): number {
  return Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** attempts);
}

/** The Topic header for a payload about one request (one pending message per request). */
export function topicOf(payload: PushPayload): string | undefined {
  return "approvalId" in payload ? pushTopic(payload.approvalId) : undefined;
}

export interface PushQueueHooks {
  /** A request's delivery record changed: show it live. */
  onDelivery(approvalId: string): void;
  /** The push service says the subscription is gone (404/410). */
  onGone(deviceId: string): Promise<void>;
}

export class PushQueue {
  private readonly budget: PushBudget;
  private readonly shownCounts: ShownCounts;

  constructor(
    private readonly host: HubHost,
    private readonly directory: Directory,
    private readonly hooks: PushQueueHooks,
  ) {
    this.budget = new PushBudget(host);
    this.shownCounts = new ShownCounts(host);
  }

  /**
   * Queues a new request's push for these devices, each as its budget allows (`push-budget.ts`):
   * the request itself, the device's one summary, or nothing. A replayed request queues nothing.
   * Returns the devices the request itself was queued for.
   */
  queueNews(news: ApprovalNews, devices: HubDevice[], now: number): string[] {
    const { approval } = news;
    const queued: string[] = [];
    this.budget.prune(now);
    for (const device of devices) {
      const spend = this.budget.spend(device.id, approval.id, now);
      if (spend?.kind === "summary") {
        const { payload, urgency } = summaryPush(spend.waiting);
        this.enqueue(device.id, null, payload, urgency, approval.expiresAt, now);
      }
      if (spend?.kind !== "approval") continue;
      const fresh = this.host.sql
        .exec(
          `INSERT INTO deliveries (approval_id, device_id, user_id, device_name) VALUES (?, ?, ?, ?)
           ON CONFLICT DO NOTHING RETURNING device_id`,
          approval.id,
          device.id,
          device.userId,
          device.name,
        )
        .toArray();
      const { payload, urgency } = approvalPush(news);
      if (fresh.length === 0) continue;
      this.enqueue(device.id, approval.id, payload, urgency, approval.expiresAt, now);
      queued.push(device.id);
    }
    return queued;
  }

  /**
   * Of these devices, those the push service took the request for, or whose push of it is still
   * being retried (a 429 or 5xx is no unreachable device, yet).
   */
  reachedOrTrying(approvalId: string, deviceIds: string[]): string[] {
    const trying = new Set(
      this.host.sql
        .exec("SELECT device_id FROM push_queue WHERE approval_id = ?", approvalId)
        .toArray()
        .map((r) => r.device_id as string),
    );
    const delivered = new Set(this.deliveries(approvalId).flatMap((d) => (d.deliveredAt === null ? [] : [d.deviceId])));
    return deviceIds.filter((id) => delivered.has(id) || trying.has(id));
  }

  /** Nothing left to ask: drop its unsent pushes, and close the notification where one went out. */
  queueResolved(approval: Approval, now: number): void {
    const { sql } = this.host;
    sql.exec("DELETE FROM push_queue WHERE approval_id = ?", approval.id);
    const pushed = sql
      .exec("SELECT device_id FROM deliveries WHERE approval_id = ? AND sent_at IS NOT NULL", approval.id)
      .toArray();
    const payload = resolvedPayload(approval);
    for (const row of pushed) {
      this.enqueue(row.device_id as string, null, payload, "normal", now + RESOLVED_TTL_S * 1000, now);
    }
  }

  queueTest(deviceId: string, now: number): void {
    this.enqueue(deviceId, null, { v: 1, type: "test" }, "normal", now + TEST_TTL_MS, now);
  }

  /** A removed device gets nothing more. */
  forgetDevice(deviceId: string): void {
    this.host.sql.exec("DELETE FROM push_queue WHERE device_id = ?", deviceId);
    this.budget.forgetDevice(deviceId);
  }

  /**
   * A service worker receipt for this device (the first time of each counts); `displayed` and
   * `opened` also set `seen_at`. False when the request is unknown here or the device not this user's.
   */
  markReceipt(approvalId: string, deviceId: string, userId: string, event: ReceiptEvent, now: number): boolean {
    const column = RECEIPT_COLUMNS[event];
    // A push this hub did not record (a presence push sent before a restart, an older queue) still
    // counts, for a request the hub knows, on a device of this user's.
    const device = this.directory.device(deviceId);
    if (device?.userId === userId) {
      this.host.sql.exec(
        `INSERT INTO deliveries (approval_id, device_id, user_id, device_name)
         SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM approvals WHERE id = ?) ON CONFLICT DO NOTHING`,
        approvalId,
        deviceId,
        userId,
        device.name,
        approvalId,
      );
    }
    const known = this.host.sql
      .exec(
        `SELECT ${column} AS at, seen_at, displayed_at, opened_at, sent_day FROM deliveries
          WHERE approval_id = ? AND device_id = ? AND user_id = ?`,
        approvalId,
        deviceId,
        userId,
      )
      .toArray()[0];
    if (!known) return false;
    // A duplicate (the service worker retries a receipt) sets nothing: the cards and the gate are not told again.
    if (known.at !== null && (event === "received" || known.seen_at !== null)) return true;
    const firstShown = event !== "received" && known.displayed_at === null && known.opened_at === null;
    if (firstShown && known.sent_day !== null) this.shownCounts.displayed(deviceId, known.sent_day as number);
    const seen = event === "received" ? "seen_at" : "COALESCE(seen_at, ?1)";
    this.host.sql.exec(
      `UPDATE deliveries SET ${column} = COALESCE(${column}, ?1), seen_at = ${seen}
        WHERE approval_id = ?2 AND device_id = ?3 AND user_id = ?4`,
      now,
      approvalId,
      deviceId,
      userId,
    );
    this.hooks.onDelivery(approvalId);
    return true;
  }

  /**
   * An escalation's repeat: the request once more to those of `devices` it was pushed to, each
   * as its budget allows (`spendRepeat`). The device ids queued.
   */
  queueRepeat(news: ApprovalNews, devices: HubDevice[], now: number): string[] {
    const { approval } = news;
    const queued: string[] = [];
    for (const device of devices) {
      const pushed = this.host.sql
        .exec(
          "SELECT 1 FROM deliveries WHERE approval_id = ? AND device_id = ? AND sent_at IS NOT NULL",
          approval.id,
          device.id,
        )
        .toArray();
      if (pushed.length === 0 || !this.budget.spendRepeat(device.id, approval.id, now)) continue;
      const { payload, urgency } = approvalPush(news);
      this.enqueue(device.id, approval.id, payload, urgency, approval.expiresAt, now);
      queued.push(device.id);
    }
    return queued;
  }

  deliveries(approvalId: string): Delivery[] {
    return this.host.sql
      .exec(
        `SELECT device_id AS deviceId, device_name AS deviceName, user_id AS userId, sent_at AS sentAt,
                delivered_at AS deliveredAt, seen_at AS seenAt, failed_at AS failedAt, received_at AS receivedAt,
                displayed_at AS displayedAt, opened_at AS openedAt
           FROM deliveries WHERE approval_id = ? ORDER BY device_name`,
        approvalId,
      )
      .toArray() as unknown as Delivery[];
  }

  /** Each of this user's devices' latest pushes, newest first (for `device-health.ts`). */
  recentByDevice(userId: string, perDevice: number): Map<string, Delivery[]> {
    const rows = this.host.sql
      .exec(
        `SELECT device_id AS deviceId, device_name AS deviceName, user_id AS userId, sent_at AS sentAt,
                delivered_at AS deliveredAt, seen_at AS seenAt, failed_at AS failedAt, received_at AS receivedAt,
                displayed_at AS displayedAt, opened_at AS openedAt
           FROM deliveries WHERE user_id = ? AND sent_at IS NOT NULL ORDER BY sent_at DESC`,
        userId,
      )
      .toArray() as unknown as Delivery[];
    const byDevice = new Map<string, Delivery[]>();
    for (const d of rows) {
      const list = byDevice.get(d.deviceId) ?? [];
      if (list.length < perDevice) list.push(d);
      byDevice.set(d.deviceId, list);
    }
    return byDevice;
  }

  /** This user's devices' and the team's per-platform shown ÷ sent over the 7 days to `now`. */
  displayReport(userId: string, now: number): DisplayReport {
    return this.shownCounts.report(userId, now);
  }

  /** Forgets the deliveries of requests resolved before `before` (the feed forgets the requests). */
  pruneDeliveries(before: number): void {
    this.host.sql.exec(
      "DELETE FROM deliveries WHERE approval_id IN (SELECT id FROM approvals WHERE state <> 'pending' AND updated_at < ?)",
      before,
    );
  }

  /** Sends what is due at `now`; failures wait with backoff, until their message would be too late. */
  /** Whether any push is queued (sent or not yet). */
  waiting(): boolean {
    return this.host.sql.exec("SELECT 1 FROM push_queue LIMIT 1").toArray().length > 0;
  }

  async drain(now = Date.now()): Promise<void> {
    const { sql } = this.host;
    const vapid = this.vapid();
    sql.exec("DELETE FROM push_queue WHERE expires_at <= ?", now);
    // Claim the due jobs before the first await: a drain running alongside (another news item,
    // the alarm) must not send them a second time. A claim that outlives a crash just retries.
    // At most DRAIN_PER_TURN: the rest stay due, and the alarm set below comes back for them at once.
    const due = sql
      .exec(
        `UPDATE push_queue SET next_at = ?1 WHERE seq IN
           (SELECT seq FROM push_queue WHERE next_at <= ?2 ORDER BY seq LIMIT ?3) RETURNING *`,
        now + SEND_CLAIM_MS,
        now,
        DRAIN_PER_TURN,
      )
      .toArray()
      .sort((a, b) => (a.seq as number) - (b.seq as number));
    await Promise.all(due.map((job) => this.sendJob(job, vapid)));
    const next = sql.exec("SELECT MIN(next_at) AS at FROM push_queue").one().at as number | null;
    if (next !== null) await this.host.setAlarm(next);
  }

  private enqueue(
    deviceId: string,
    approvalId: string | null,
    payload: PushPayload,
    urgency: Urgency,
    expiresAt: number,
    now: number,
  ): void {
    this.host.sql.exec(
      "INSERT INTO push_queue (device_id, approval_id, payload, urgency, expires_at, next_at) VALUES (?, ?, ?, ?, ?, ?)",
      deviceId,
      approvalId,
      JSON.stringify(payload),
      urgency,
      expiresAt,
      now,
    );
  }

  private async sendJob(job: Record<string, SqlStorageValue>, vapid: VapidKeys | null): Promise<void> {
    const { sql } = this.host;
    const seq = job.seq as number;
    const approvalId = job.approval_id as string | null;
    const device = this.directory.device(job.device_id as string);
    if (!device || !vapid) {
      sql.exec("DELETE FROM push_queue WHERE seq = ?", seq);
      return;
    }
    const ttlSeconds = ((job.expires_at as number) - Date.now()) / 1000;
    const payload = JSON.parse(job.payload as string) as PushPayload;
    if (approvalId) this.countFirstSend(approvalId, device);
    if (approvalId) this.track(approvalId, device.id, "sent_at");
    const outcome = await sendPush(
      { endpoint: device.endpoint, keys: { p256dh: device.p256dh, auth: device.auth } },
      pushMessage(payload, this.host.appOrigin),
      { ttlSeconds, urgency: job.urgency as Urgency, topic: topicOf(payload) },
      vapid,
    );
    if (outcome === "retry") {
      const attempts = (job.attempts as number) + 1;
      sql.exec(
        "UPDATE push_queue SET attempts = ?, next_at = ? WHERE seq = ?",
        attempts,
        Date.now() + retryDelayMs(attempts),
        seq,
      );
      return;
    }
    sql.exec("DELETE FROM push_queue WHERE seq = ?", seq);
    if (outcome === "gone") await this.hooks.onGone(device.id);
    if (approvalId) this.track(approvalId, device.id, outcome === "delivered" ? "delivered_at" : "failed_at");
  }

  /** A request's first send to a device counts once, today (a retry or a ladder repeat does not). */
  private countFirstSend(approvalId: string, device: HubDevice): void {
    const day = dayOf(Date.now());
    const first = this.host.sql
      .exec(
        "UPDATE deliveries SET sent_day = ? WHERE approval_id = ? AND device_id = ? AND sent_day IS NULL RETURNING 1",
        day,
        approvalId,
        device.id,
      )
      .toArray();
    if (first.length > 0) this.shownCounts.sent(device, day);
  }

  private track(approvalId: string, deviceId: string, column: "sent_at" | "delivered_at" | "failed_at"): void {
    this.host.sql.exec(
      `UPDATE deliveries SET ${column} = ? WHERE approval_id = ? AND device_id = ?`,
      Date.now(),
      approvalId,
      deviceId,
    );
    this.hooks.onDelivery(approvalId);
  }

  private vapid(): VapidKeys | null {
    const { VAPID_PUBLIC_KEY, VAPID_PRIVATE_KEY, VAPID_SUBJECT } = this.host.env;
    if (!VAPID_PUBLIC_KEY || !VAPID_PRIVATE_KEY) return null;
    return {
      publicKey: VAPID_PUBLIC_KEY,
      privateKey: VAPID_PRIVATE_KEY,
      subject: VAPID_SUBJECT ?? "mailto:tapgate@localhost",
    };
  }
}
