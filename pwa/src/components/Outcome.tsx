import type { ApprovalView } from "../api";
import { useNow } from "../clock";
import { outcomeWithTime } from "../format";
import { useMe } from "../viewer";
import { Banner } from "./Banner";
import { SafeText } from "./SafeText";

/** A decided card's outcome: who decided, when, and their words to the agent. */
export function Outcome({ approval }: { approval: ApprovalView }) {
  const now = useNow();
  const me = useMe();
  return (
    <Banner tone={approval.state === "allowed" ? "ok" : "error"} testId="outcome">
      <strong>
        <SafeText text={outcomeWithTime(approval, now, me?.user.id)} />
      </strong>
      {approval.message && (
        <span class="outcome-message" data-testid="outcome-message">
          <SafeText text={`“${approval.message}”`} />
        </span>
      )}
    </Banner>
  );
}
