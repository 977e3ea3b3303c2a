import { render } from "preact";
import { setDecisionDeviceName } from "./api";
import { App } from "./app";
import { thisDevice } from "./device";
import { navigate } from "./router";
import "./styles.css";

setDecisionDeviceName(thisDevice()?.name ?? null);

// Not in `vite dev`: a cache-first worker would pin stale modules under hot reload.
if (import.meta.env.PROD && "serviceWorker" in navigator) {
  navigator.serviceWorker.register("/sw.js").catch(() => {
    // The app works without it; only offline start-up and notifications are lost.
  });
  // A notification tap in an already-open window: route there without a reload.
  navigator.serviceWorker.addEventListener("message", (e: MessageEvent) => {
    const data = e.data as { type?: string; url?: string } | null;
    if (data?.type === "navigate" && typeof data.url === "string" && data.url.startsWith("/")) navigate(data.url);
  });
}

const root = document.getElementById("app");
if (root) render(<App />, root);
