import { useNow } from "../clock";
import { clock } from "../format";

/**
 * Time left until `expiresAt`. The visible text ticks every second; screen readers get a quieter
 * live region that speaks only whole minutes and the moment it runs out.
 */
export function Countdown({ expiresAt, testId = "countdown" }: { expiresAt: number; testId?: string }) {
  const now = useNow();
  const left = expiresAt - now;
  const expired = left <= 0;
  const urgent = !expired && left < 60_000;
  const spoken = expired ? "Expired" : `${Math.ceil(left / 60_000)} minutes left`;
  return (
    <span class={`countdown${urgent ? " urgent" : ""}${expired ? " expired" : ""}`} data-testid={testId}>
      <span aria-hidden="true">{expired ? "expired" : `${clock(left)} left`}</span>
      <span class="visually-hidden" aria-live="polite" aria-atomic="true">
        {spoken}
      </span>
    </span>
  );
}
