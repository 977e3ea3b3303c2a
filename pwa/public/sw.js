/**
 * Tapgate's service worker: an offline app shell, and Web Push notifications.
 * Plain JS served as is; the build writes the precache list and version into the two placeholders.
 */
const VERSION = "__TAPGATE_VERSION__";
const PRECACHE = /* __TAPGATE_PRECACHE__ */ [];
const SHELL = `tapgate-shell-${VERSION}`;
// The page stores this device's id here: a service worker cannot read localStorage.
const META = "tapgate-meta";
const DEVICE_KEY = "/__tapgate/device";
const RESOLVED_NOTICE_MS = 4000;
const APP = "/";

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
      .then((keys) => Promise.all(keys.filter((k) => k !== SHELL && k !== META).map((k) => caches.delete(k))))
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
async function networkFirstShell(request) {
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

async function cacheFirst(request) {
  const cache = await caches.open(SHELL);
  const cached = await cache.match(request);
  if (cached) return cached;
  const response = await fetch(request);
  if (response.ok) await cache.put(request, response.clone());
  return response;
}

// ── push ────────────────────────────────────────────────────────────────────

self.addEventListener("push", (event) => {
  let message = null;
  try {
    message = event.data ? event.data.json() : null;
  } catch {
    // fall through: every push must show something (iOS revokes silent pushes)
  }
  event.waitUntil(onPush(message));
});

async function onPush(message) {
  const type = message && message.v === 1 ? message.type : null;
  if (type === "approval" && typeof message.approvalId === "string") return showApproval(message);
  if (type === "resolved" && typeof message.approvalId === "string") return closeResolved(message);
  if (type === "summary") {
    const count = Number(message.count) || 0;
    return self.registration.showNotification(`${count} request${count === 1 ? "" : "s"} waiting`, {
      tag: "tapgate-summary",
      body: "Open Tapgate to review them.",
      icon: "/icons/icon-192.png",
      data: { url: "/" },
    });
  }
  if (type === "test") {
    return self.registration.showNotification("Tapgate test", {
      tag: "tapgate-test",
      body: "Notifications work on this device.",
      icon: "/icons/icon-192.png",
      data: { url: "/devices" },
    });
  }
  return self.registration.showNotification("Tapgate", {
    body: "Open Tapgate to see what changed.",
    data: { url: "/" },
  });
}

async function showApproval(message) {
  const id = message.approvalId;
  const expiresAt = Number(message.expiresAt) || 0;
  await self.registration.showNotification(visible(String(message.title || "An agent is asking for permission")), {
    tag: id,
    body: expiresAt ? `Expires at ${new Date(expiresAt).toLocaleTimeString([], { timeStyle: "short" })}` : "",
    icon: "/icons/icon-192.png",
    badge: "/icons/icon-192.png",
    requireInteraction: true,
    timestamp: Date.now(),
    // Deny only: allowing needs the full card in front of the person, never the lock screen.
    actions: [{ action: "deny", title: "Deny" }],
    data: { approvalId: id, url: `/approvals/${encodeURIComponent(id)}` },
  });
  const device = await thisDevice();
  if (device) {
    await fetch(`/v1/approvals/${encodeURIComponent(id)}/seen`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ deviceId: device.id }),
    }).catch(() => {});
  }
}

async function closeResolved(message) {
  const open = await self.registration.getNotifications({ tag: message.approvalId });
  for (const n of open) n.close();
  if (open.length > 0) return;
  // iOS shows every push and may have dropped ours already: a brief notice instead.
  await self.registration.showNotification("Resolved", {
    tag: message.approvalId,
    body: message.state ? `The request was ${message.state}.` : "The request was resolved.",
    icon: "/icons/icon-192.png",
    silent: true,
    data: { url: "/history" },
  });
  await new Promise((resolve) => setTimeout(resolve, RESOLVED_NOTICE_MS));
  for (const n of await self.registration.getNotifications({ tag: message.approvalId })) n.close();
}

self.addEventListener("notificationclick", (event) => {
  const n = event.notification;
  n.close();
  const data = n.data || {};
  if (event.action === "deny" && data.approvalId) event.waitUntil(denyFromNotification(data.approvalId, data.url));
  else event.waitUntil(openApp(data.url || "/"));
});

/** Picks the request's reject_once option (never reject_always); anything unexpected opens the card. */
async function denyFromNotification(id, url) {
  const path = `/v1/approvals/${encodeURIComponent(id)}`;
  try {
    const got = await fetch(path);
    if (!got.ok) return openApp(url);
    const approval = await got.json();
    const reject = (approval.options || []).find((o) => o.kind === "reject_once");
    if (approval.state !== "pending" || !reject) return openApp(url);
    const device = await thisDevice();
    const res = await fetch(`${path}/decision`, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "X-Tapgate-Device": encodeURIComponent(device ? device.name : "notification"),
      },
      body: JSON.stringify({ optionId: reject.optionId, requestHash: approval.requestHash }),
    });
    if (res.ok) return;
    const body = await res.json().catch(() => ({}));
    await self.registration.showNotification("Not denied", {
      tag: id,
      body: visible(body.message || `The server answered ${res.status}.`),
      icon: "/icons/icon-192.png",
      data: { url },
    });
  } catch {
    return openApp(url);
  }
}

async function openApp(url) {
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  const client = windows.find((w) => new URL(w.url).origin === self.location.origin);
  if (!client) return self.clients.openWindow(url);
  // The app routes itself (no reload); see main.tsx.
  client.postMessage({ type: "navigate", url });
  return client.focus();
}

async function thisDevice() {
  const cache = await caches.open(META);
  const stored = await cache.match(DEVICE_KEY);
  return stored ? stored.json().catch(() => null) : null;
}

/** Lock screens render text raw: make direction overrides and invisible characters visible. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;

function visible(text) {
  return text
    .replace(UNSAFE, (c) => `⟨U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}⟩`)
    .slice(0, 200);
}
