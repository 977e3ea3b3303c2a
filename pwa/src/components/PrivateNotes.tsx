/**
 * How private mode shows (docs/threat-model.md "Private mode"): the "Private" tag on a row, the
 * banner asking to set up this device, and what a card or row says of a private request this
 * device could not open. None of these shows anything of the request's content.
 */
import type { SealedRequest } from "../../../sdk/src/private/sealed";
import { canDecide, type Me } from "../api";
import { deviceKey, useDeviceKey } from "../private/device-key";
import { useTeamPrivacy } from "../private/privacy";
import { type PrivateState, readable } from "../private/use-private";
import { useAction } from "../use-action";
import { Banner } from "./Banner";
import { SafeText } from "./SafeText";

/** A small lock and "Private": the request's content was sealed to the team's devices. */
export function PrivateTag({ state }: { state: PrivateState }) {
  if (state === null) return null;
  return (
    <span class="tag private" data-testid="private-tag">
      <span aria-hidden="true">🔒</span> Private
    </span>
  );
}

/** In a private team, on a browser without a registered key: one tap (the passkey prompt) sets it up. */
export function SetUpDeviceBanner({ me }: { me: Me | null }) {
  const privacy = useTeamPrivacy(me);
  const key = useDeviceKey(me);
  const { busy, error, run } = useAction();
  // Viewers never decide, so they register no key (the server refuses them).
  if (!me || !canDecide(me.role) || privacy !== "private" || !key.loaded || key.registered) return null;
  return (
    <Banner tone="warn" testId="device-key-banner">
      <button
        type="button"
        class="link-button"
        disabled={busy}
        data-testid="device-key-set-up"
        onClick={() => run(() => deviceKey.register(me))}
      >
        Set up this device to read private requests
      </button>
      {busy && <span class="muted"> — confirm with your passkey…</span>}
      {error && (
        <span class="block" data-testid="device-key-error">
          <SafeText text={error} />
        </span>
      )}
    </Banner>
  );
}

/** Why this device shows nothing of a private request (or that it is still opening it). */
export function SealedNotice({ state, sealed, me }: { state: PrivateState; sealed: SealedRequest; me: Me | null }) {
  const key = useDeviceKey(me);
  if (state === "opening") return <p class="muted">Opening the private request on this device…</p>;
  if (state === "altered") {
    return (
      <Banner tone="error" testId="sealed-altered">
        Altered on the way — Tapgate cannot show what the agent asked. Deny it.
      </Banner>
    );
  }
  if (state !== "not_a_recipient") return null;
  const names = key.keys.filter((k) => sealed.recipients.some((r) => r.deviceId === k.deviceId)).map((k) => k.name);
  return (
    <Banner tone="warn" testId="sealed-not-recipient">
      <SafeText
        text={`Sealed before this device was set up (or without its key): open it on ${
          names.length > 0 ? names.join(", ") : "a device of yours it was sealed to"
        }.`}
      />
    </Banner>
  );
}

/** A row's title: the request's own once readable, else why this device shows none of it. */
export function rowTitle(state: PrivateState, title: string): string {
  if (readable({ private: state })) return title;
  if (state === "altered") return "Private request — altered on the way";
  if (state === "not_a_recipient") return "Private request — not sealed to this device";
  return "Private request";
}
