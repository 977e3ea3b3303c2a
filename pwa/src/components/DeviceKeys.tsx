/**
 * Devices: my device keys in this team (private mode), this browser's marked, each removable;
 * and setting up this browser's when it has none. A removed key stops getting new private
 * requests; what was sealed to it stays readable only where the key still is.
 */
import { canDecide } from "../api";
import { useNow } from "../clock";
import { ago } from "../format";
import { deviceKey, useDeviceKey } from "../private/device-key";
import { useTeamPrivacy } from "../private/privacy";
import { useAction } from "../use-action";
import { useMe } from "../viewer";
import { Banner } from "./Banner";
import { SafeText } from "./SafeText";

export function DeviceKeys() {
  const me = useMe();
  const key = useDeviceKey(me);
  const privacy = useTeamPrivacy(me);
  const now = useNow();
  const { busy, error, run } = useAction();
  if (!me || (privacy !== "private" && key.keys.length === 0)) return null;
  return (
    <section class="panel" data-testid="device-keys" aria-labelledby="device-keys-title">
      <h2 id="device-keys-title">Keys for private requests</h2>
      <p class="muted small">
        Private requests are sealed on the agent's machine to these keys; each stays in its browser and never leaves it.
        A device set up later cannot read requests sealed before it.
      </p>
      {key.loaded && !key.registered && canDecide(me.role) && (
        <button
          type="button"
          class="button primary"
          disabled={busy}
          onClick={() => run(() => deviceKey.register(me))}
          data-testid="device-key-add"
        >
          Set up this device to read private requests
        </button>
      )}
      {error && (
        <Banner tone="error" testId="device-keys-error">
          <SafeText text={error} />
        </Banner>
      )}
      <ul class="rows">
        {key.keys.map((k) => (
          <li key={k.deviceId} class="row device-row" data-testid={`device-key-${k.deviceId}`}>
            <div class="row-main">
              <span class="row-title">
                <SafeText text={k.name} />
                {k.deviceId === key.key?.deviceId && (
                  <span class="tag" data-testid="this-device-key">
                    this device
                  </span>
                )}
              </span>
              <span class="row-sub muted">added {ago(k.createdAt, now)}</span>
            </div>
            <div class="row-actions">
              <button
                type="button"
                class="button danger"
                disabled={busy}
                onClick={() => run(() => deviceKey.remove(k.deviceId))}
                data-testid="device-key-remove"
                aria-label={`Remove the key of ${k.name}`}
              >
                Remove
              </button>
            </div>
          </li>
        ))}
      </ul>
    </section>
  );
}
