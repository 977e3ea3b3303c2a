/**
 * Opening a private request on this device (docs/threat-model.md "Private mode"): find the key
 * it was sealed to, open it (`openSealed` checks the plaintext against `requestHash`), and check
 * that what the service offers is what the agent asked: the service's option ids and kinds must
 * each be one of the plaintext's (policy may leave some out, never add or change one). Only then
 * is anything of the request shown, with the agent's words in place of the service's.
 * Used by the app and the service worker: DOM/worker neutral.
 *
 * Owns: the opening and the option check. Does not own: the envelope (sdk/src/private/envelope.ts)
 * or where keys live (key-store.ts).
 */
import type { Approval } from "../../../sdk/src/approval";
import type { SealedPlaintext } from "../../../sdk/src/private/contract";
import { openSealed } from "../../../sdk/src/private/envelope";
import type { StoredDeviceKey } from "./key-store";

/** What this device made of a private request. */
export type PrivateOutcome =
  | { state: "opened"; plaintext: SealedPlaintext }
  /** It did not open, or opened to something other than what the service offers: never shown. */
  | { state: "altered" }
  /** None of this browser's keys is among its recipients (sealed before this device was set up). */
  | { state: "not_a_recipient" };

type Sealed = Pick<Approval, "sealed" | "requestHash" | "options">;

/** Opens a sealed approval with whichever of `keys` it was sealed to. */
export async function openWithKeys(approval: Sealed, keys: readonly StoredDeviceKey[]): Promise<PrivateOutcome> {
  const sealed = approval.sealed;
  if (!sealed) return { state: "altered" };
  const key = keys.find((k) => sealed.recipients.some((r) => r.deviceId === k.deviceId));
  if (!key) return { state: "not_a_recipient" };
  const opened = await openSealed(sealed, approval.requestHash, { deviceId: key.deviceId, keyPair: key.keyPair });
  if (!opened.ok) return { state: opened.reason };
  if (!offersOnlyAsked(approval.options, opened.plaintext.options)) return { state: "altered" };
  return { state: "opened", plaintext: opened.plaintext };
}

/**
 * Whether every option the service offers is one the agent asked for, with the same kind, each
 * once: a subset of the plaintext's (policy filtering), never a new or changed one.
 */
export function offersOnlyAsked(
  offered: ReadonlyArray<{ optionId: string; kind: string }>,
  asked: ReadonlyArray<{ optionId: string; kind: string }>,
): boolean {
  const ids = new Set(offered.map((o) => o.optionId));
  if (ids.size !== offered.length) return false;
  return offered.every((o) => asked.some((a) => a.optionId === o.optionId && a.kind === o.kind));
}

/** The approval as the agent asked it: the plaintext's snapshot, and its names for the options the service offers. */
export function asAsked<A extends Approval>(approval: A, plaintext: SealedPlaintext): A {
  return {
    ...approval,
    snapshot: plaintext.snapshot,
    options: approval.options.map((o) => ({
      ...o,
      name: plaintext.options.find((p) => p.optionId === o.optionId)?.name ?? o.name,
    })),
  };
}
