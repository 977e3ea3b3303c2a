/**
 * This browser's device key in the app: whether it has one registered for the signed-in person
 * and team, making and registering one (a new key pair, the person's passkey over
 * `deviceKeyChallenge`, `POST /v1/devices/keys`), and the person's keys as the server lists them
 * (for the Devices screen and "open it on …"). Shared by every screen, like the pending list.
 *
 * Owns: the registration steps and this browser's key state. Does not own: where the key is kept
 * (key-store.ts) or what the server checks (docs/human-api.md "Device keys").
 */
import type { PublicKeyCredentialRequestOptionsJSON } from "@simplewebauthn/browser";
import { startAuthentication } from "@simplewebauthn/browser";
import { useEffect, useState } from "preact/hooks";
import type { DeviceKey } from "../../../sdk/src/private/contract";
import { deviceKeyChallenge, newDeviceKeyPair } from "../../../sdk/src/private/envelope";
import { type ApiError, api, type Me } from "../api";
import { guessDeviceName, thisDevice } from "../device";
import { forgetDeviceKey, type StoredDeviceKey, storeDeviceKey, storedDeviceKey } from "./key-store";

export interface DeviceKeyState {
  /** False until the stored key and the server's list were read. */
  loaded: boolean;
  /** The key this browser holds for the person and team (registered or not). */
  key: StoredDeviceKey | null;
  /** This browser's key is among the person's keys the server lists. */
  registered: boolean;
  /** The person's keys in the team (`GET /v1/devices/keys` lists the team's; these are theirs). */
  keys: DeviceKey[];
  error: ApiError | null;
}

const EMPTY: DeviceKeyState = { loaded: false, key: null, registered: false, keys: [], error: null };

class DeviceKeyStore {
  state: DeviceKeyState = EMPTY;
  private slot: { teamId: string; userId: string } | null = null;
  private readonly listeners = new Set<(s: DeviceKeyState) => void>();

  /** Follows the signed-in person and team; reloads when either changes. */
  follow(me: Me): void {
    if (this.slot?.teamId === me.team.id && this.slot.userId === me.user.id) return;
    this.slot = { teamId: me.team.id, userId: me.user.id };
    this.set(EMPTY);
    void this.reload();
  }

  async reload(): Promise<void> {
    const slot = this.slot;
    if (!slot) return;
    const key = (await storedDeviceKey(slot.teamId, slot.userId).catch(() => undefined)) ?? null;
    const listed = await api.deviceKeys().then(
      (r) => ({ keys: r.keys.filter((k) => k.userId === slot.userId), error: null }),
      (e: ApiError) => ({ keys: [] as DeviceKey[], error: e }),
    );
    if (slot !== this.slot) return;
    const registered = !!key && listed.keys.some((k) => k.deviceId === key.deviceId);
    this.set({ loaded: true, key, registered, ...listed });
  }

  /**
   * Makes this browser's key and registers it, endorsed by the person's passkey (its prompt is
   * the one step the person sees). Throws with words to show when anything fails.
   */
  async register(me: Me): Promise<void> {
    const { teamId, userId } = { teamId: me.team.id, userId: me.user.id };
    const made = await newDeviceKeyPair();
    const { options } = await api.deviceKeyOptions(made.publicKey);
    // The passkey signs only an endorsement of this very key for this team.
    if (options.challenge !== deviceKeyChallenge(teamId, made.publicKey)) {
      throw new Error(
        "The server asked the passkey to sign something other than this device's key. Nothing was set up.",
      );
    }
    const assertion = await startAuthentication({
      optionsJSON: options as unknown as PublicKeyCredentialRequestOptionsJSON,
    }).catch(() => {
      throw new Error("The passkey check did not finish, so this device was not set up. Try again.");
    });
    const pushDevice = thisDevice();
    await api.registerDeviceKey({
      publicKey: made.publicKey,
      name: pushDevice?.name ?? (await guessDeviceName()),
      ...(pushDevice && { pushDeviceId: pushDevice.id }),
      assertion,
    });
    await storeDeviceKey({ teamId, userId, ...made, createdAt: Date.now() });
    await this.reload();
  }

  /** Removes one of the person's keys; this browser's own is forgotten here too. */
  async remove(deviceId: string): Promise<void> {
    await api.removeDeviceKey(deviceId);
    const slot = this.slot;
    if (slot && this.state.key?.deviceId === deviceId) await forgetDeviceKey(slot.teamId, slot.userId);
    await this.reload();
  }

  subscribe(listener: (s: DeviceKeyState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private set(next: DeviceKeyState): void {
    this.state = next;
    for (const l of this.listeners) l(next);
  }
}

export const deviceKey = new DeviceKeyStore();

/** This browser's key state for the signed-in person (null when signed out). */
export function useDeviceKey(me: Me | null): DeviceKeyState {
  const [state, setState] = useState(deviceKey.state);
  useEffect(() => {
    const unsubscribe = deviceKey.subscribe(setState);
    // What changed between the first render and the subscription.
    setState(deviceKey.state);
    return unsubscribe;
  }, []);
  useEffect(() => {
    if (me) deviceKey.follow(me);
  }, [me?.team.id, me?.user.id]);
  return state;
}
