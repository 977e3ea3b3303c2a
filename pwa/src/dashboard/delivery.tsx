/**
 * What reached whom, on the board: each pending request's push delivery per device, read once
 * per new row and kept current by the live feed, and the chips that show it.
 *
 * Owns: the delivery map and its chips. Does not own: the board's rows (Board.tsx) or the
 * delivery record itself (the hub's, `worker/hub/push-queue.ts`).
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { api, type Delivery, type PendingApproval } from "../api";
import { SafeText } from "../components/SafeText";
import { useLiveEvents } from "../live";

/** Per device: the furthest step the push reached. */
export function DeliveryChips({ delivery }: { delivery: Delivery[] | undefined }) {
  if (!delivery) return <span class="muted">…</span>;
  if (delivery.length === 0)
    return (
      <span class="muted" data-testid="unreached">
        no device reached
      </span>
    );
  const shown = delivery.slice(0, 2);
  return (
    <span class="chips">
      {shown.map((x) => {
        const step = x.failedAt
          ? "failed"
          : x.seenAt
            ? "seen"
            : x.deliveredAt
              ? "delivered"
              : x.sentAt
                ? "sent"
                : "queued";
        return (
          <span key={x.deviceId} class={`chip dlv-${step}`} title={`${x.deviceName}: ${step}`} data-step={step}>
            <span class="clip chip-name">
              <SafeText text={x.deviceName} />
            </span>{" "}
            {step}
          </span>
        );
      })}
      {delivery.length > shown.length && <span class="muted small">+{delivery.length - shown.length}</span>}
    </span>
  );
}

/**
 * Delivery per request. The list endpoint leaves it out, so each new row's card is read once;
 * live events that carry delivery keep it current.
 */
export function useDelivery(rows: PendingApproval[]): Map<string, Delivery[]> {
  const [byId, setById] = useState<Map<string, Delivery[]>>(new Map());
  const asked = useRef(new Set<string>());
  useEffect(() => {
    for (const a of rows) {
      if (a.delivery || asked.current.has(a.id)) continue;
      asked.current.add(a.id);
      api.approval(a.id).then(
        (full) => setById((m) => new Map(m).set(a.id, full.delivery ?? [])),
        () => {},
      );
    }
  });
  useLiveEvents((e) => {
    if (e.type !== "approval" || !e.approval.delivery) return;
    const d = e.approval.delivery;
    setById((m) => new Map(m).set(e.approval.id, d));
  });
  return byId;
}
