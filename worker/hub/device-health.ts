/**
 * How a push device is doing, from its most recent pushes (pure, unit-tested in
 * `device-health.test.ts`): the Devices screen flags one whose pushes keep failing, or that the
 * push service takes but that never shows them (a known iOS failure).
 *
 * Owns: the rule. Does not own: the delivery rows (`push-queue.ts`) or what the screen says.
 */
import type { Delivery } from "../../sdk/src/approval";
import type { DeviceHealth } from "./api";

/** How many of a device's latest pushes the rule looks at; all of them must agree. */
export const HEALTH_WINDOW = 3;
/** A push the service took that the device has not reported by then was not shown. */
export const SHOWN_WITHIN_MS = 60_000;

/** `deliveries`: one device's pushes, newest first. */
export function deviceHealthOf(deliveries: Delivery[], now: number): DeviceHealth {
  const recent = deliveries.filter((d) => d.sentAt !== null).slice(0, HEALTH_WINDOW);
  if (recent.length < HEALTH_WINDOW) return "ok";
  if (recent.every((d) => d.failedAt !== null)) return "failing";
  const unshown = (d: Delivery) =>
    d.deliveredAt !== null &&
    d.deliveredAt <= now - SHOWN_WITHIN_MS &&
    !d.receivedAt &&
    !d.displayedAt &&
    !d.openedAt &&
    d.seenAt === null;
  return recent.every(unshown) ? "not_shown" : "ok";
}

/** The health of each device, from its most recent deliveries (`HEALTH_WINDOW` per device). */
export function devicesHealth(recentByDevice: Map<string, Delivery[]>, now: number): Record<string, DeviceHealth> {
  return Object.fromEntries([...recentByDevice].map(([deviceId, recent]) => [deviceId, deviceHealthOf(recent, now)]));
}
