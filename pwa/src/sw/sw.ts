/**
 * Tapgate's service worker: an offline app shell, and Web Push notifications with their
 * receipts (received, displayed, opened). Built by
 * pwa/vite.config.ts into /sw.js (one classic script); the build puts the precache list and
 * the version in front of it as `PRECACHE` and `VERSION`. Pushes and answers are read with the
 * human-API contract's schemas (sdk/src/human).
 */
/// <reference lib="webworker" />
import { config } from "zod";
import { approvalSchema } from "../../../sdk/src/approval";
import { errorBodySchema } from "../../../sdk/src/errors";
import {
  approvalTitle,
  type PushPayload,
  pushPayloadSchema,
  SUMMARY_TAG,
  summaryText,
  TEST_TAG,
  TEST_TEXT,
} from "../../../sdk/src/human/push";
import { withVisibleTokens } from "../../../sdk/src/safe-text";
import { privateNotificationTitle } from "./private-push";
import { META_CACHE, META_KEY, type ThisDevice } from "./shared";

declare const self: ServiceWorkerGlobalScope;
/** Written by the build in front of this script. */
declare const VERSION: string;
declare const PRECACHE: string[];

// The site's CSP has no 'unsafe-eval': zod must not try to compile its parsers.
config({ jitless: true });

const SHELL = `tapgate-shell-${VERSION}`;
const RESOLVED_NOTICE_MS = 4000;
const APP = "/";
const ICON = "/icons/icon-192.png";

self.addEventListener("install", (event) => {
  event.waitUntil(
    caches
      .open(SHELL)
      .then((cache) => cache.addAll(PRECACHE))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((keys) => Promise.all(keys.filter((k) => k !== SHELL && k !== META_CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  const url = new URL(request.url);
  // The API and the live feed are never cached: stale approvals would be worse than "offline".
  if (request.method !== "GET" || url.origin !== self.location.origin || url.pathname.startsWith("/v1/")) return;
  event.respondWith(request.mode === "navigate" ? networkFirstShell(request) : cacheFirst(request));
});

/** Every route is the SPA: the fresh page when online, the cached one offline. */
async function networkFirstShell(request: Request): Promise<Response> {
  const cache = await caches.open(SHELL);
  try {
    const response = await fetch(request);
    if (response.ok && !response.redirected) await cache.put(APP, response.clone());
    return response;
  } catch {
    const cached = await cache.match(APP);
    return cached ?? new Response("Tapgate is offline.", { status: 503, headers: { "Content-Type": "text/plain" } });
  }
}

async function cacheFirst(request: Request): Promise<Response> {
  const cache = await caches.open(SHELL);
  const cached = await cache.match(request);
  if (cached) return cached;
  const response = await fetch(request);
  if (response.ok) await cache.put(request, response.clone());
  return response;
}

// ── push ────────────────────────────────────────────────────────────────────

self.addEventListener("push", (event) => {
  let data: unknown = null;
  try {
    data = event.data ? event.data.json() : null;
  } catch {
    // fall through: every push must show something (iOS revokes silent pushes)
  }
  const message = pushPayloadSchema.safeParse(data);
  event.waitUntil(onPush(message.success ? message.data : null));
});

async function onPush(message: PushPayload | null): Promise<void> {
  switch (message?.type) {
    case "approval":
      return showApproval(message);
    case "resolved":
      return closeResolved(message);
    case "summary": {
      const { title, body } = summaryText(message.count);
      return self.registration.showNotification(title, { tag: SUMMARY_TAG, body, icon: ICON, data: { url: "/" } });
    }
    case "test":
      return self.registration.showNotification(TEST_TEXT.title, {
        tag: TEST_TAG,
        body: TEST_TEXT.body,
        icon: ICON,
        data: { url: "/devices" },
      });
    default:
      return self.registration.showNotification("Tapgate", {
        body: "Open Tapgate to see what changed.",
        data: { url: "/" },
      });
  }
}

async function showApproval(message: Extract<PushPayload, { type: "approval" }>): Promise<void> {
  const id = message.approvalId;
  const expiresAt = message.expiresAt;
  // Receipts, so "delivered but never shown" (a known iOS failure) is visible: the push arrived…
  const receipt = report(id, "received");
  // `actions`, `requireInteraction` and `timestamp` are not in every lib's NotificationOptions.
  const options: NotificationOptions & Record<string, unknown> = {
    tag: id,
    body: expiresAt ? `Expires at ${new Date(expiresAt).toLocaleTimeString([], { timeStyle: "short" })}` : "",
    icon: ICON,
    badge: ICON,
    requireInteraction: true,
    // An escalation's repeat of the same request (same tag) alerts again instead of replacing silently.
    renotify: true,
    timestamp: Date.now(),
    // Deny only: allowing needs the full card in front of the person, never the lock screen. A
    // high-risk request offers no action at all: it is decided on its card, with a passkey.
    actions: message.risk === "high" ? [] : [{ action: "deny", title: "Deny" }],
    data: { approvalId: id, url: `/approvals/${encodeURIComponent(id)}` },
  };
  // A private request's push carries no title: this device opens the request itself.
  const title =
    "private" in message && message.private ? await privateNotificationTitle(message) : approvalTitle(message);
  await self.registration.showNotification(title, options);
  // …and showNotification resolved: it is on the screen.
  await Promise.all([receipt, report(id, "displayed")]);
}

/** Tells the server what happened to a request's push on this device (best effort). */
async function report(approvalId: string, event: "received" | "displayed" | "opened"): Promise<void> {
  const device = await thisDevice();
  if (!device) return;
  await fetch(`/v1/approvals/${encodeURIComponent(approvalId)}/receipt`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ deviceId: device.id, event }),
  }).catch(() => {});
}

async function closeResolved(message: Extract<PushPayload, { type: "resolved" }>): Promise<void> {
  const open = await self.registration.getNotifications({ tag: message.approvalId });
  for (const n of open) n.close();
  if (open.length > 0) return;
  // iOS shows every push and may have dropped ours already: a brief notice instead.
  await self.registration.showNotification("Resolved", {
    tag: message.approvalId,
    body: `The request was ${message.state}.`,
    icon: ICON,
    silent: true,
    data: { url: "/history" },
  });
  await new Promise((resolve) => setTimeout(resolve, RESOLVED_NOTICE_MS));
  for (const n of await self.registration.getNotifications({ tag: message.approvalId })) n.close();
}

self.addEventListener("notificationclick", (event) => {
  const n = event.notification;
  n.close();
  const data = (n.data ?? {}) as { approvalId?: string; url?: string };
  const opened = data.approvalId ? report(data.approvalId, "opened") : Promise.resolve();
  if (event.action === "deny" && data.approvalId) {
    event.waitUntil(Promise.all([opened, denyFromNotification(data.approvalId, data.url)]));
  } else event.waitUntil(Promise.all([opened, openApp(data.url || "/")]));
});

/** Picks the request's reject_once option (never reject_always); anything unexpected opens the card. */
async function denyFromNotification(id: string, url = "/"): Promise<unknown> {
  const path = `/v1/approvals/${encodeURIComponent(id)}`;
  try {
    const got = await fetch(path);
    if (!got.ok) return openApp(url);
    const approval = approvalSchema.safeParse(await got.json());
    if (!approval.success) return openApp(url);
    const reject = approval.data.options.find((o) => o.kind === "reject_once");
    if (approval.data.state !== "pending" || !reject) return openApp(url);
    const device = await thisDevice();
    const res = await fetch(`${path}/decision`, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "X-Tapgate-Device": encodeURIComponent(device ? device.name : "notification"),
      },
      body: JSON.stringify({ optionId: reject.optionId, requestHash: approval.data.requestHash }),
    });
    if (res.ok) return;
    const refusal = errorBodySchema.safeParse(await res.json().catch(() => null));
    await self.registration.showNotification("Not denied", {
      tag: id,
      body: visible(refusal.success ? refusal.data.message : `The server answered ${res.status}.`),
      icon: ICON,
      data: { url },
    });
  } catch {
    return openApp(url);
  }
}

async function openApp(url: string): Promise<unknown> {
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  const client = windows.find((w) => new URL(w.url).origin === self.location.origin);
  if (!client) return self.clients.openWindow(url);
  // The app routes itself (no reload); see main.tsx.
  client.postMessage({ type: "navigate", url });
  return client.focus();
}

async function thisDevice(): Promise<ThisDevice | null> {
  const cache = await caches.open(META_CACHE);
  const stored = await cache.match(META_KEY);
  return stored ? (stored.json() as Promise<ThisDevice>).catch(() => null) : null;
}

/** Lock screens render text raw: make direction overrides and invisible characters visible (as the app does). */
function visible(text: string): string {
  return withVisibleTokens(text).slice(0, 200);
}
