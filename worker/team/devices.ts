/**
 * Push devices as use cases: save one (D1, then the team hub's copy) and remove one. D1 is the
 * record; the hub keeps the copy it pushes from.
 *
 * Owns: the per-person device limit and keeping both copies in step. Does not own: the SQL
 * (`db/devices.ts`), sending pushes (the hub).
 */
import { deleteDevice, saveDevice } from "../db";
import { REQUEST_BUDGET_MS, waitAtMost } from "../deadline";
import { DomainError } from "../errors";
import { hubFor } from "../hub/api";
import type { Env } from "../types";

const MAX_DEVICES_PER_USER = 20;

export interface DeviceInput {
  teamId: string;
  userId: string;
  name: string;
  subscription: { endpoint: string; keys: { p256dh: string; auth: string } };
  userAgent: string;
}

/** Saves (or renames) a device of this person; 409 `too_many_devices` past the limit. */
export async function addDevice(env: Env, d: DeviceInput) {
  const device = await saveDevice(env.DB, {
    teamId: d.teamId,
    userId: d.userId,
    name: d.name,
    endpoint: d.subscription.endpoint,
    p256dh: d.subscription.keys.p256dh,
    auth: d.subscription.keys.auth,
    userAgent: d.userAgent,
    now: Date.now(),
    limit: MAX_DEVICES_PER_USER,
  });
  if (!device) {
    throw new DomainError("too_many_devices", `at most ${MAX_DEVICES_PER_USER} devices per person; remove one first`);
  }
  // The device stands in D1; a hub that misses it reads its directory again within DIRECTORY_MAX_AGE_MS.
  await waitAtMost(hubFor(env, d.teamId).deviceSaved(d.teamId, device), REQUEST_BUDGET_MS, "hub.deviceSaved");
  return device;
}

/** Removes one of this person's devices (404 when they have none by that id). */
export async function removeDevice(env: Env, r: { teamId: string; userId: string; deviceId: string }): Promise<void> {
  if (!(await deleteDevice(env.DB, r.teamId, r.deviceId, r.userId)))
    throw new DomainError("not_found", "no such device");
  await waitAtMost(hubFor(env, r.teamId).deviceRemoved(r.deviceId), REQUEST_BUDGET_MS, "hub.deviceRemoved");
}
