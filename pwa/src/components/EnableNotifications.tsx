import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import { enableNotifications, guessDeviceName, pushSupport, type ThisDevice, thisDevice } from "../device";
import { useAction } from "../use-action";
import { Banner } from "./Banner";
import { Field } from "./Field";

/**
 * "Enable notifications on this device". The VAPID key and a name are fetched up front so that
 * the click's first act is the permission prompt: iOS only shows it inside a user gesture.
 */
export function EnableNotifications({ onEnabled }: { onEnabled?: (d: ThisDevice) => void }) {
  const support = pushSupport();
  const [key, setKey] = useState<string | null>(null);
  const [name, setName] = useState("");
  const { busy, error, setError, run } = useAction();
  const [device, setDevice] = useState(thisDevice);

  useEffect(() => {
    if (support !== "supported") return;
    api.pushKey().then(
      (k) => setKey(k.publicKey),
      (e: Error) => setError(e.message),
    );
    guessDeviceName().then((n) => setName((current) => current || n));
  }, [support]);

  if (support === "needs-install") {
    return (
      <Banner tone="info" testId="push-needs-install">
        To get notifications on iPhone or iPad, add Tapgate to your Home Screen (Share → Add to Home Screen), then open
        it from there.
      </Banner>
    );
  }
  if (support === "unsupported") {
    return (
      <Banner tone="info" testId="push-unsupported">
        This browser cannot receive push notifications. Pending requests still appear here live.
      </Banner>
    );
  }

  const enable = async (e: Event) => {
    e.preventDefault();
    if (!key) return;
    await run(async () => {
      const d = await enableNotifications(key, name.trim() || "This device");
      setDevice(d);
      onEnabled?.(d);
    });
  };

  return (
    <form class="stack" onSubmit={enable} data-testid="enable-notifications">
      {device && Notification.permission === "granted" && (
        <Banner tone="ok" testId="notifications-on">
          Notifications are on for this device ({device.name}).
        </Banner>
      )}
      <Field label="Device name">
        <input
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
          maxLength={64}
          autocomplete="off"
          data-testid="device-name"
        />
      </Field>
      <button
        type="submit"
        class="button primary wide"
        disabled={!key || busy}
        data-testid="enable-notifications-button"
      >
        {busy ? "Enabling…" : device ? "Re-enable notifications on this device" : "Enable notifications on this device"}
      </button>
      {error && (
        <Banner tone="error" testId="notifications-error">
          {error}
        </Banner>
      )}
    </form>
  );
}
