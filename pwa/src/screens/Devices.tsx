import { useEffect, useState } from "preact/hooks";
import type { PlatformFigures } from "../../../sdk/src/human/push";
import { type ApiError, api, type Device } from "../api";
import { useNow } from "../clock";
import { Banner, LoadBanner } from "../components/Banner";
import { DeviceKeys } from "../components/DeviceKeys";
import { EnableNotifications } from "../components/EnableNotifications";
import { DeviceShownWarning, shownText, TeamPlatforms } from "../components/PushesShown";
import { SafeText } from "../components/SafeText";
import { TelegramLink } from "../components/TelegramLink";
import { WebSessions } from "../components/WebSessions";
import { forgetThisDevice, thisDevice } from "../device";
import { ago } from "../format";
import { deviceKey } from "../private/device-key";

/**
 * My push devices: this browser and the others, each with a test push, a way to remove it and
 * how many of its pushes showed; the team's pushes shown per platform; linking my Telegram chat
 * (where the server has a bot); then the browsers signed in as me, each of which I can sign out.
 */
export function Devices() {
  const [devices, setDevices] = useState<Device[] | null>(null);
  const [platforms, setPlatforms] = useState<PlatformFigures[]>([]);
  const [error, setError] = useState<ApiError | null>(null);
  const load = () =>
    api.devices().then(
      (r) => {
        setDevices(r.devices);
        setPlatforms(r.platforms);
        setError(null);
      },
      (e: ApiError) => setError(e),
    );
  useEffect(() => void load(), []);

  return (
    <section class="screen" data-testid="screen-devices">
      <h1>Devices</h1>
      <section class="panel">
        <h2>This device</h2>
        <EnableNotifications onEnabled={() => void load()} />
      </section>
      <h2 class="group-title">Devices that get notifications</h2>
      {error && <LoadBanner error={error} testId="devices-error" what="your devices" />}
      {devices?.length === 0 && (
        <p class="muted" data-testid="devices-empty">
          No devices yet. Enable notifications above, on each phone you want to approve from.
        </p>
      )}
      <ul class="rows">
        {devices?.map((d) => (
          <DeviceRow
            key={d.id}
            device={d}
            onRemoved={() => setDevices((all) => all?.filter((x) => x.id !== d.id) ?? null)}
          />
        ))}
      </ul>
      <TeamPlatforms platforms={platforms} />
      <DeviceKeys />
      <TelegramLink />
      {/* A full load drops every cached list, as the header's sign-out does. */}
      <WebSessions onSignedOutHere={() => location.assign("/signin")} />
    </section>
  );
}

/** What to do about a device whose pushes do not get through (`health` of `GET /v1/devices`). */
const HEALTH_ADVICE = {
  failing:
    "Its last pushes failed. Remove this device and turn notifications on again from it; if that fails too, check that notifications are allowed for Tapgate in the system settings.",
  not_shown:
    "Its last pushes were delivered but never shown. On iPhone, open Tapgate from the home screen icon (not Safari) and allow notifications; then send a test push.",
} as const;

const ACTIONS = [
  ["test", "secondary", "Send test push"],
  ["remove", "danger", "Remove"],
] as const;

function DeviceRow({ device, onRemoved }: { device: Device; onRemoved: () => void }) {
  const now = useNow();
  const [status, setStatus] = useState<{ tone: "ok" | "error"; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const mine = thisDevice()?.id === device.id;
  const shown = shownText(device);

  const act = async (what: "test" | "remove") => {
    setBusy(true);
    setStatus(null);
    try {
      if (what === "test") {
        await api.testDevice(device.id);
        setStatus({ tone: "ok", text: "Test notification sent. It should arrive within seconds." });
      } else {
        await api.removeDevice(device.id);
        if (mine) await forgetThisDevice();
        onRemoved();
        // The server removes the device's key for private requests with it.
        void deviceKey.reload();
      }
    } catch (e) {
      setStatus({ tone: "error", text: (e as Error).message });
    } finally {
      setBusy(false);
    }
  };

  return (
    <li class="row device-row" data-testid={`device-row-${device.id}`}>
      <div class="row-main">
        <span class="row-title">
          <SafeText text={device.name} />
          {mine && (
            <span class="tag" data-testid="this-device">
              this device
            </span>
          )}
        </span>
        <span class="row-sub muted">
          {device.lastSeenAt ? `last seen ${ago(device.lastSeenAt, now)}` : `added ${ago(device.createdAt, now)}`}
        </span>
        {shown && (
          <span class="row-sub muted" data-testid="device-shown">
            {shown}
          </span>
        )}
      </div>
      <div class="row-actions">
        {ACTIONS.map(([what, tone, label]) => (
          <button
            key={what}
            type="button"
            class={`button ${tone}`}
            disabled={busy}
            onClick={() => act(what)}
            data-testid={`device-${what}`}
          >
            {label}
          </button>
        ))}
      </div>
      {device.health !== "ok" && (
        <Banner tone="warn" testId="device-health">
          {HEALTH_ADVICE[device.health]}
        </Banner>
      )}
      <DeviceShownWarning figures={device} />
      {status && (
        <Banner tone={status.tone} testId="device-status">
          {status.text}
        </Banner>
      )}
    </li>
  );
}
