/**
 * This browser as a push device: asking permission (only from a click: iOS refuses otherwise),
 * subscribing with the server's VAPID key, and remembering the device id for the "this device"
 * mark, for decision attribution, and for the service worker's `seen` reports.
 */
import { api, setDecisionDeviceName } from "./api";
import { META_CACHE, META_KEY, type ThisDevice } from "./sw/shared";

export type { ThisDevice };

const STORAGE_KEY = "tapgate.device";

export function thisDevice(): ThisDevice | null {
  try {
    const stored = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? "null") as ThisDevice | null;
    return stored && typeof stored.id === "string" && typeof stored.name === "string" ? stored : null;
  } catch {
    return null;
  }
}

async function remember(device: ThisDevice | null): Promise<void> {
  if (device) localStorage.setItem(STORAGE_KEY, JSON.stringify(device));
  else localStorage.removeItem(STORAGE_KEY);
  setDecisionDeviceName(device?.name ?? null);
  const cache = await caches.open(META_CACHE);
  if (device) await cache.put(META_KEY, new Response(JSON.stringify(device)));
  else await cache.delete(META_KEY);
}

export type PushSupport = "supported" | "needs-install" | "unsupported";

/** iOS offers Web Push only to apps added to the Home Screen. */
export function pushSupport(): PushSupport {
  if ("serviceWorker" in navigator && "PushManager" in window && "Notification" in window) return "supported";
  const ios = /iPhone|iPad|iPod/.test(navigator.userAgent);
  return ios ? "needs-install" : "unsupported";
}

/** A name a person recognises: the model where the browser tells it, else platform and browser. */
export async function guessDeviceName(): Promise<string> {
  const uaData = (navigator as Navigator & { userAgentData?: UADataLike }).userAgentData;
  const model = await uaData?.getHighEntropyValues(["model"]).then(
    (v) => v.model,
    () => undefined,
  );
  if (model) return model;
  const ua = navigator.userAgent;
  const platform = /iPhone/.test(ua)
    ? "iPhone"
    : /iPad/.test(ua)
      ? "iPad"
      : /Android/.test(ua)
        ? "Android"
        : /Mac OS X/.test(ua)
          ? "Mac"
          : /Windows/.test(ua)
            ? "Windows"
            : "Linux";
  const browser = /Edg\//.test(ua) ? "Edge" : /Firefox\//.test(ua) ? "Firefox" : /Chrom/.test(ua) ? "Chrome" : "Safari";
  return `${browser} on ${platform}`;
}

interface UADataLike {
  getHighEntropyValues(hints: string[]): Promise<{ model?: string }>;
}

/**
 * Call straight from a click handler, with the VAPID key already fetched: the permission prompt
 * must be the first thing the gesture does.
 */
export async function enableNotifications(publicKey: string, name: string): Promise<ThisDevice> {
  const permission = await Notification.requestPermission();
  if (permission !== "granted") {
    throw new Error(
      permission === "denied"
        ? "Notifications are blocked for this site. Allow them in the browser's site settings, then try again."
        : "Notifications were not allowed.",
    );
  }
  const registration = await navigator.serviceWorker.ready;
  const subscription =
    (await registration.pushManager.getSubscription()) ??
    (await registration.pushManager.subscribe({
      userVisibleOnly: true,
      applicationServerKey: base64UrlToBytes(publicKey),
    }));
  const json = subscription.toJSON();
  const keys = json.keys ?? {};
  if (!json.endpoint || !keys.p256dh || !keys.auth) throw new Error("The browser returned an incomplete subscription.");
  const created = await api.addDevice({
    name,
    subscription: { endpoint: json.endpoint, keys: { p256dh: keys.p256dh, auth: keys.auth } },
  });
  const device = { id: created.id, name: created.name };
  await remember(device);
  return device;
}

/** Removing this browser also drops its subscription, so the push service stops waking it. */
export async function forgetThisDevice(): Promise<void> {
  const registration = await navigator.serviceWorker?.getRegistration();
  const subscription = await registration?.pushManager.getSubscription();
  await subscription?.unsubscribe();
  await remember(null);
}

function base64UrlToBytes(s: string): Uint8Array<ArrayBuffer> {
  const b64 = s
    .replace(/-/g, "+")
    .replace(/_/g, "/")
    .padEnd(Math.ceil(s.length / 4) * 4, "=");
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}
