/**
 * This browser's device keys for private mode (docs/threat-model.md "Private mode"), in
 * IndexedDB: the `CryptoKeyPair` object itself (its private key not extractable, so it never
 * leaves this browser as bytes), one per team and signed-in person. Used by the app and by the
 * service worker (IndexedDB is shared with it), so it stays DOM/worker neutral.
 *
 * Owns: where a device key is kept and how it is found. Does not own: making or registering one
 * (register.ts) or opening a request with it (open.ts).
 */
import { createStore, del, get, set, values } from "idb-keyval";
import type { DeviceKeyPair } from "../../../sdk/src/private/envelope";

/** A device key as this browser keeps it. */
export interface StoredDeviceKey {
  teamId: string;
  userId: string;
  deviceId: string;
  /** Raw uncompressed P-256, base64url: what the server lists. */
  publicKey: string;
  keyPair: DeviceKeyPair;
  createdAt: number;
}

const store = () => createStore("tapgate-private", "device-keys");
const slot = (teamId: string, userId: string) => `${teamId}/${userId}`;

/** This browser's key for a team and person, if it made one. */
export function storedDeviceKey(teamId: string, userId: string): Promise<StoredDeviceKey | undefined> {
  return get<StoredDeviceKey>(slot(teamId, userId), store());
}

export function storeDeviceKey(key: StoredDeviceKey): Promise<void> {
  return set(slot(key.teamId, key.userId), key, store());
}

export function forgetDeviceKey(teamId: string, userId: string): Promise<void> {
  return del(slot(teamId, userId), store());
}

/**
 * Every key this browser holds, whatever the team: the service worker knows no team, and picks
 * the key by the device ids a request was sealed to.
 */
export function allDeviceKeys(): Promise<StoredDeviceKey[]> {
  return values<StoredDeviceKey>(store());
}
