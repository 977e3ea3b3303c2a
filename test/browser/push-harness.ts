/**
 * The browser suite's stand-in for the push service (the one thing that lives outside this
 * machine): a subscription as one would hand out, `PushManager.subscribe` answering it, and CDP
 * push delivery to the page's service worker, with the notifications it shows read back.
 */
import { createECDH, randomBytes } from "node:crypto";
import type { BrowserContext, Page } from "playwright-core";
import { vi } from "vitest";

/** A subscription as a push service would hand out: an FCM endpoint and fresh client keys. */
export function fakeSubscription() {
  const ecdh = createECDH("prime256v1");
  ecdh.generateKeys();
  return {
    endpoint: `https://fcm.googleapis.com/fcm/send/${randomBytes(24).toString("base64url")}`,
    keys: {
      p256dh: ecdh.getPublicKey().toString("base64url"),
      auth: randomBytes(16).toString("base64url"),
    },
  };
}
export type FakeSubscription = ReturnType<typeof fakeSubscription>;

/**
 * Headless Chromium has no push service: `PushManager.prototype.subscribe` answers with the
 * given subscription (and records the VAPID key it was asked for); `getSubscription` returns it
 * once subscribed. Everything else (permission, service worker, the page's code) is real.
 */
export async function stubPushService(context: BrowserContext, subscription: FakeSubscription): Promise<void> {
  await context.addInitScript((sub: FakeSubscription) => {
    const KEY = "tapgate.test.subscribed";
    const bytes = (s: string) => {
      const b64 = s.replace(/-/g, "+").replace(/_/g, "/");
      return Uint8Array.from(atob(b64.padEnd(Math.ceil(b64.length / 4) * 4, "=")), (c) => c.charCodeAt(0)).buffer;
    };
    const make = (serverKey: string | null) => ({
      endpoint: sub.endpoint,
      expirationTime: null,
      options: { userVisibleOnly: true, applicationServerKey: serverKey ? bytes(serverKey) : null },
      getKey: (name: "p256dh" | "auth") => bytes(sub.keys[name]),
      toJSON: () => ({ endpoint: sub.endpoint, expirationTime: null, keys: { ...sub.keys } }),
      unsubscribe: async () => {
        localStorage.removeItem(KEY);
        return true;
      },
    });
    const toB64Url = (key: BufferSource | string | null | undefined): string | null => {
      if (!key) return null;
      if (typeof key === "string") return key;
      const view =
        key instanceof ArrayBuffer ? new Uint8Array(key) : new Uint8Array(key.buffer, key.byteOffset, key.byteLength);
      return btoa(String.fromCharCode(...view))
        .replace(/\+/g, "-")
        .replace(/\//g, "_")
        .replace(/=+$/, "");
    };
    PushManager.prototype.subscribe = async function subscribe(options?: PushSubscriptionOptionsInit) {
      const serverKey = toB64Url(options?.applicationServerKey);
      localStorage.setItem(KEY, JSON.stringify({ serverKey, userVisibleOnly: options?.userVisibleOnly ?? false }));
      return make(serverKey) as unknown as PushSubscription;
    };
    PushManager.prototype.getSubscription = async function getSubscription() {
      const stored = localStorage.getItem(KEY);
      return stored ? (make(JSON.parse(stored).serverKey) as unknown as PushSubscription) : null;
    };
  }, subscription);
}

/** What the page's subscribe call asked the (stubbed) push service for. */
export function subscribeCall(page: Page) {
  return page.evaluate(
    () =>
      JSON.parse(localStorage.getItem("tapgate.test.subscribed") ?? "null") as {
        serverKey: string | null;
        userVisibleOnly: boolean;
      } | null,
  );
}

/** Watches the page's service workers over CDP, to find the registration to push to. */
export async function watchServiceWorkers(page: Page) {
  const cdp = await page.context().newCDPSession(page);
  const versions = new Map<string, { registrationId: string; scriptURL: string; status: string }>();
  const registrations = new Map<string, { scopeURL: string; isDeleted: boolean }>();
  cdp.on("ServiceWorker.workerVersionUpdated", ({ versions: updated }) => {
    for (const v of updated) versions.set(v.versionId, v);
  });
  cdp.on("ServiceWorker.workerRegistrationUpdated", ({ registrations: updated }) => {
    for (const r of updated) registrations.set(r.registrationId, r);
  });
  await cdp.send("ServiceWorker.enable");
  return {
    cdp,
    /** The activated service worker's registration for `scope` (e.g. http://localhost:1234/). */
    async activeRegistration(scope: string): Promise<string> {
      return vi.waitFor(
        () => {
          const id = [...versions.values()].find(
            (v) =>
              v.status === "activated" &&
              registrations.get(v.registrationId)?.scopeURL === scope &&
              !registrations.get(v.registrationId)?.isDeleted,
          )?.registrationId;
          if (!id) throw new Error(`no activated service worker for ${scope} yet`);
          return id;
        },
        { timeout: 15_000, interval: 50 },
      );
    },
    deliver(origin: string, registrationId: string, payload: unknown) {
      return cdp.send("ServiceWorker.deliverPushMessage", { origin, registrationId, data: JSON.stringify(payload) });
    },
  };
}

/** The notifications the page's service worker registration shows, as plain data. */
export function shownNotifications(page: Page, tag?: string) {
  return page.evaluate(async (tag) => {
    const registration = await navigator.serviceWorker.ready;
    const shown = await registration.getNotifications(tag ? { tag } : undefined);
    return shown.map((n) => ({
      title: n.title,
      body: n.body,
      tag: n.tag,
      data: n.data as unknown,
      requireInteraction: n.requireInteraction,
      actions: ((n as Notification & { actions?: Array<{ action: string; title: string }> }).actions ?? []).map(
        (a) => ({ action: a.action, title: a.title }),
      ),
    }));
  }, tag);
}

/**
 * Waits (up to 30 s: a bound, not a measure) until the notification tagged `tag` shows `title`.
 * A failure says what the browser held then: the permission, the service worker's states and
 * every notification shown, so a push that never showed can be told from one that showed late.
 */
export async function expectNotificationTitle(page: Page, tag: string, title: string): Promise<void> {
  try {
    await vi.waitFor(
      async () => {
        const shown = (await shownNotifications(page, tag))[0]?.title;
        if (shown !== title) throw new Error(`notification ${tag}: ${JSON.stringify(shown)}`);
      },
      { timeout: 30_000, interval: 100 },
    );
  } catch (error) {
    const state = await page.evaluate(async () => {
      const registration = await navigator.serviceWorker.getRegistration();
      return {
        permission: Notification.permission,
        active: registration?.active?.state ?? null,
        waiting: registration?.waiting?.state ?? null,
        installing: registration?.installing?.state ?? null,
        shown: (await registration?.getNotifications())?.map((n) => `${n.tag}: ${n.title}`) ?? [],
      };
    });
    throw new Error(`${error instanceof Error ? error.message : String(error)}; the browser: ${JSON.stringify(state)}`);
  }
}
