/**
 * How many of the team's pushes showed, per UTC day and device: one `sent` per request and
 * device when its push first goes to the push service, one `displayed` on that delivery's first
 * `displayed` or `opened` receipt, counted on the day it was sent (so a day never shows more
 * than it sent). Delivery rows go 24 h after their request ends; these counters keep 7 days of
 * figures for the Devices screen (`GET /v1/devices`) and are pruned after `KEEP_DAYS`.
 *
 * Owns: the `display_days` table, the window and the retention. Does not own: when a push is
 * sent or a receipt arrives (`push-queue.ts` calls in), which push service an endpoint is
 * (`web-push.ts`), or when a device is flagged (`showsTooFew` in `sdk/src/human/push.ts`).
 */
import type { DisplayFigures, PushPlatform } from "../../sdk/src/human/push";
import type { DisplayReport, HubDevice } from "./api";
import type { HubHost } from "./host";
import { pushPlatformOf } from "./web-push";

const DAY_MS = 86_400_000;
/** The figures cover today and the 6 days before it (UTC). */
export const WINDOW_DAYS = 7;
/** A day's counters are deleted once it is this many days old: the window and one more. */
export const KEEP_DAYS = 8;

/** The UTC day number of a moment. */
export const dayOf = (ms: number): number => Math.floor(ms / DAY_MS);

interface SumRow extends Record<string, SqlStorageValue> {
  sent: number;
  displayed: number;
}

function figuresOf({ sent, displayed }: SumRow): DisplayFigures {
  return { sent7d: sent, displayed7d: displayed, displayedRatio: sent === 0 ? null : displayed / sent };
}

export class ShownCounts {
  /** The day this object last pruned on a send: the table is swept once a day, not once per push. */
  private prunedDay = -1;

  constructor(private readonly host: HubHost) {}

  /** A request's push went to `device`'s push service for the first time, on `day`. */
  sent(device: HubDevice, day: number): void {
    const platform = pushPlatformOf(device.endpoint);
    if (!platform) return;
    if (day !== this.prunedDay) this.prune(day * DAY_MS);
    this.prunedDay = day;
    this.host.sql.exec(
      `INSERT INTO display_days (day, device_id, user_id, platform, sent, displayed) VALUES (?, ?, ?, ?, 1, 0)
       ON CONFLICT (day, device_id) DO UPDATE SET sent = sent + 1`,
      day,
      device.id,
      device.userId,
      platform,
    );
  }

  /** The device showed a push sent on `sentDay` (its delivery's first `displayed` or `opened`). */
  displayed(deviceId: string, sentDay: number): void {
    this.host.sql.exec(
      "UPDATE display_days SET displayed = displayed + 1 WHERE day = ? AND device_id = ?",
      sentDay,
      deviceId,
    );
  }

  /** This user's devices' figures and the team's per platform, over the window ending `now`. */
  report(userId: string, now: number): DisplayReport {
    this.prune(now);
    const { sql } = this.host;
    const from = dayOf(now) - WINDOW_DAYS + 1;
    const devices = sql
      .exec<SumRow & { device_id: string }>(
        `SELECT device_id, SUM(sent) AS sent, SUM(displayed) AS displayed FROM display_days
          WHERE user_id = ? AND day >= ? GROUP BY device_id`,
        userId,
        from,
      )
      .toArray();
    const platforms = sql
      .exec<SumRow & { platform: PushPlatform }>(
        `SELECT platform, SUM(sent) AS sent, SUM(displayed) AS displayed FROM display_days
          WHERE day >= ? GROUP BY platform ORDER BY platform`,
        from,
      )
      .toArray();
    return {
      devices: Object.fromEntries(devices.map((row) => [row.device_id, figuresOf(row)])),
      platforms: platforms.map((row) => ({ platform: row.platform, ...figuresOf(row) })),
    };
  }

  /** Forgets the days `KEEP_DAYS` old and older at `now`. */
  prune(now: number): void {
    this.host.sql.exec("DELETE FROM display_days WHERE day <= ?", dayOf(now) - KEEP_DAYS);
  }
}
