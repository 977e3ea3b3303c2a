/**
 * The board's notices of requests the team's limits refused (the live feed's `refused` events):
 * the latest few, newest first, so a team sees an agent hitting its quota as it happens.
 */
import { useState } from "preact/hooks";
import type { QuotaRefusal } from "../../../sdk/src/human/index";
import { useNow } from "../clock";
import { Banner } from "../components/Banner";
import { SafeText } from "../components/SafeText";
import { ago } from "../format";
import { useLiveEvents } from "../live";
import { limitLabel } from "./Limits";

const KEPT = 5;

export function RefusalNotices() {
  const now = useNow();
  const [refusals, setRefusals] = useState<QuotaRefusal[]>([]);
  useLiveEvents((e) => {
    if (e.type === "refused") setRefusals((prev) => [e.refusal, ...prev].slice(0, KEPT));
  });
  if (refusals.length === 0) return null;
  return (
    <Banner tone="warn" testId="board-refusals">
      <ul class="plain">
        {refusals.map((r) => (
          <li key={`${r.sessionId}:${r.at}:${r.limit}`} data-testid="board-refusal">
            Refused a request of <SafeText text={r.owner.name || "a member"} /> in session{" "}
            <SafeText text={r.sessionId} />: over the team's {limitLabel(r.limit)} limit · retry in{" "}
            {Math.ceil(r.retryAfterMs / 1000)} s · {ago(r.at, now)}
          </li>
        ))}
      </ul>
      <button type="button" class="link-button" onClick={() => setRefusals([])} data-testid="board-refusals-clear">
        Dismiss
      </button>
    </Banner>
  );
}
