/**
 * The team's live feed (`GET /v1/live`, a WebSocket held by the TeamHub). Reconnects with
 * jittered backoff, and after every (re)connect tells screens to resync from the API, because
 * events sent while the socket was down are gone. Tells the hub whether the page is visible and
 * which pending cards it shows (presence: no push for what a visible page already shows).
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { type LiveEvent as FeedEvent, liveEventSchema } from "../../sdk/src/human/live";

/** What the feed sends (the contract's events), and "resync" after every (re)connect. */
export type LiveEvent = FeedEvent | { type: "resync" };
export type LiveStatus = "connecting" | "live" | "offline";

const PING_EVERY_MS = 25_000;
const PONG_WITHIN_MS = 10_000;
const MAX_BACKOFF_MS = 30_000;

class LiveFeed {
  status: LiveStatus = "connecting";
  private ws: WebSocket | null = null;
  private running = false;
  private attempt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private pingTimer: ReturnType<typeof setInterval> | undefined;
  private pongTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly events = new Set<(e: LiveEvent) => void>();
  private readonly statuses = new Set<(s: LiveStatus) => void>();
  /** Pending cards on screen now, and those already reported seen on this socket. */
  private showing = new Set<string>();
  private reported = new Set<string>();

  start(): void {
    if (this.running) return;
    this.running = true;
    addEventListener("online", this.wake);
    document.addEventListener("visibilitychange", this.wake);
    document.addEventListener("visibilitychange", this.tellVisibility);
    this.connect();
  }

  stop(): void {
    this.running = false;
    removeEventListener("online", this.wake);
    document.removeEventListener("visibilitychange", this.wake);
    document.removeEventListener("visibilitychange", this.tellVisibility);
    clearTimeout(this.retryTimer);
    this.drop();
  }

  onEvent(fn: (e: LiveEvent) => void): () => void {
    this.events.add(fn);
    return () => this.events.delete(fn);
  }

  onStatus(fn: (s: LiveStatus) => void): () => void {
    this.statuses.add(fn);
    return () => this.statuses.delete(fn);
  }

  /**
   * The pending cards this page shows now. While the page is visible, the hub hears them as
   * seen (presence: a person with a visible page gets cards here and no push).
   */
  show(ids: string[]): void {
    this.showing = new Set(ids);
    this.reportSeen();
  }

  /** Tells the hub whether this page is visible (`visibilitychange`), then what it shows. */
  private readonly tellVisibility = () => {
    if (this.ws?.readyState !== WebSocket.OPEN) return;
    this.ws.send(JSON.stringify({ type: "visibility", visible: document.visibilityState === "visible" }));
    this.reportSeen();
  };

  private reportSeen(): void {
    if (this.ws?.readyState !== WebSocket.OPEN || document.visibilityState !== "visible") return;
    const fresh = [...this.showing].filter((id) => !this.reported.has(id));
    if (fresh.length === 0) return;
    for (const id of fresh) this.reported.add(id);
    this.ws.send(JSON.stringify({ type: "seen", approvalIds: fresh.slice(0, 200) }));
  }

  /** Back online or back in front: retry now instead of waiting out the backoff, or check the socket. */
  private readonly wake = () => {
    if (!this.running || document.visibilityState !== "visible") return;
    if (this.ws?.readyState === WebSocket.OPEN) this.ping();
    else {
      this.attempt = 0;
      clearTimeout(this.retryTimer);
      if (!this.ws) this.connect();
    }
  };

  private connect(): void {
    this.setStatus(navigator.onLine ? "connecting" : "offline");
    const ws = new WebSocket(`${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}/v1/live`);
    this.ws = ws;
    ws.onopen = () => {
      this.attempt = 0;
      this.reported.clear();
      this.tellVisibility();
      this.setStatus("live");
      this.pingTimer = setInterval(() => this.ping(), PING_EVERY_MS);
      this.emit({ type: "resync" });
    };
    ws.onmessage = (m) => this.receive(m.data);
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.drop();
      if (this.running) this.retry();
    };
  }

  private receive(data: unknown): void {
    if (data === "pong") {
      clearTimeout(this.pongTimer);
      return;
    }
    if (typeof data !== "string") return;
    let frame: unknown;
    try {
      frame = JSON.parse(data);
    } catch {
      return;
    }
    // A frame that is not the contract's changes nothing; the next resync corrects the list.
    const event = liveEventSchema.safeParse(frame);
    if (event.success) this.emit(event.data);
    else console.error("live feed: an event does not match the contract", event.error.issues);
  }

  /** A socket a phone silently lost answers no ping: close it and reconnect. */
  private ping(): void {
    if (this.ws?.readyState !== WebSocket.OPEN) return;
    this.ws.send("ping");
    clearTimeout(this.pongTimer);
    this.pongTimer = setTimeout(() => this.ws?.close(), PONG_WITHIN_MS);
  }

  private retry(): void {
    const ceiling = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** this.attempt);
    this.attempt++;
    this.retryTimer = setTimeout(() => this.connect(), ceiling / 2 + (Math.random() * ceiling) / 2);
  }

  private drop(): void {
    clearInterval(this.pingTimer);
    clearTimeout(this.pongTimer);
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onopen = null;
      ws.onmessage = null;
      ws.onclose = null;
      ws.close();
    }
    this.setStatus(navigator.onLine ? "connecting" : "offline");
  }

  private setStatus(s: LiveStatus): void {
    if (s === this.status) return;
    this.status = s;
    for (const fn of this.statuses) fn(s);
  }

  private emit(e: LiveEvent): void {
    for (const fn of this.events) fn(e);
  }
}

export const live = new LiveFeed();

/** Calls `fn` for every live event while mounted (the latest `fn`, so it may close over state). */
export function useLiveEvents(fn: (e: LiveEvent) => void): void {
  const ref = useRef(fn);
  ref.current = fn;
  useEffect(() => live.onEvent((e) => ref.current(e)), []);
}

/** Reports the pending cards a screen shows (they count as seen while the page is visible). */
export function useShowingCards(ids: string[]): void {
  const key = ids.join(",");
  useEffect(() => {
    live.show(key ? key.split(",") : []);
    return () => live.show([]);
  }, [key]);
}

export function useLiveStatus(): LiveStatus {
  const [status, setStatus] = useState(live.status);
  useEffect(() => {
    // The feed may have changed between this render and the effect (e.g. the socket opened).
    setStatus(live.status);
    return live.onStatus(setStatus);
  }, []);
  return status;
}
