/**
 * Where a card's request went: its pushes per device (sent, delivered, arrived, shown, opened)
 * and the escalation ladder as it ran, with an honest line when nothing reached anyone.
 *
 * Owns: how the card tells that story. Does not own: the data (the hub, `GET /v1/approvals/:id`).
 */
import type { ComponentChildren } from "preact";
import { CHANNEL_NAMES } from "../../../sdk/src/human/channels";
import type { ApprovalView, Delivery } from "../api";
import { useNow } from "../clock";
import { ago } from "../format";
import { SafeText } from "./SafeText";

export function Section({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <section class="card-section">
      <h2>{title}</h2>
      {children}
    </section>
  );
}

export function DeliveryList({ delivery }: { delivery: Delivery[] }) {
  const now = useNow();
  const step = (label: string, at: number | null | undefined) => (at ? `${label} ${ago(at, now)}` : null);
  return (
    <Section title="Notifications">
      <ul class="plain delivery" data-testid="card-delivery">
        {delivery.map((x) => (
          <li key={x.deviceId} data-testid={`delivery-${x.deviceId}`}>
            <SafeText text={x.deviceName} />:{" "}
            {x.failedAt
              ? `failed ${ago(x.failedAt, now)}`
              : [
                  step("sent", x.sentAt),
                  step("delivered", x.deliveredAt),
                  step("arrived", x.receivedAt),
                  step("shown", x.displayedAt ?? x.seenAt),
                  step("opened", x.openedAt),
                ]
                  .filter(Boolean)
                  .join(" · ") || "not sent yet"}
          </li>
        ))}
      </ul>
    </Section>
  );
}

/**
 * The escalation ladder as it ran (who was reached when, by push or mail), and an honest line
 * when nothing reached anyone: the next step then runs at once.
 */
export function EscalationTimeline({ approval }: { approval: ApprovalView }) {
  const now = useNow();
  const steps = approval.escalations ?? [];
  if (steps.length === 0) return null;
  const reachedDevice = (approval.delivery ?? []).some((d) => d.deliveredAt !== null);
  const reachedLive = steps.some((e) => e.shownLive.length > 0);
  const unreached = approval.state === "pending" && !reachedDevice && !reachedLive;
  return (
    <Section title="Escalation">
      {unreached && (
        <p class="warn" data-testid="card-unreached">
          No device could be reached. Tapgate moved on to the next step at once.
        </p>
      )}
      <ul class="plain" data-testid="card-escalation">
        {steps.map((e) => (
          <li key={`${e.step}-${e.phase}`} data-testid={`escalation-${e.step}-${e.phase}`}>
            {e.phase === "presence" ? "not seen on the open app: " : ""}
            {e.via === "email" ? "mailed " : e.via === "push" ? "pushed " : `posted to ${CHANNEL_NAMES[e.via]}: `}
            <SafeText text={e.to.join(", ") || "nobody"} /> {ago(e.at, now)}
            {" · "}
            {e.shownLive.length > 0 ? (
              <>
                shown on the open app of <SafeText text={e.shownLive.join(", ")} />
              </>
            ) : e.reached > 0 ? (
              `reached ${e.reached}`
            ) : (
              "reached nobody"
            )}
          </li>
        ))}
      </ul>
    </Section>
  );
}
