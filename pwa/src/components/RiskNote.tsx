/**
 * How a high-risk request is marked: a tag for lists and the board, and on the card what allowing
 * it takes (a passkey; under a quorum, who allowed so far: "1 of 2").
 */
import type { ApprovalView } from "../api";
import { Banner } from "./Banner";
import { SafeText } from "./SafeText";

/** "High risk" (and "1 of 2" under a quorum with an allow so far), or nothing for a normal request. */
export function RiskTag({ approval }: { approval: Pick<ApprovalView, "risk" | "quorum"> }) {
  if (approval.risk !== "high") return null;
  const q = approval.quorum;
  return (
    <span class="tag danger" data-testid="risk-tag">
      High risk{q && q.allowedBy.length > 0 ? ` · ${q.allowedBy.length} of ${q.required}` : ""}
    </span>
  );
}

/** On a pending high-risk card: why it asks for the passkey, and the quorum's progress. */
export function RiskBanner({ approval, myUserId }: { approval: ApprovalView; myUserId: string | undefined }) {
  if (approval.risk !== "high" || approval.state !== "pending") return null;
  const q = approval.quorum;
  const mine = q?.allowedBy.some((p) => p.userId === myUserId);
  return (
    <Banner tone="warn" testId="risk-banner">
      <strong>High risk.</strong> Allowing it asks for your passkey (PIN, fingerprint or face), bound to this exact
      request.
      {q && (
        <span data-testid="quorum-progress">
          {" "}
          It needs {q.required} different people to allow it: {q.allowedBy.length} of {q.required} so far
          {q.allowedBy.length > 0 && (
            <>
              {" "}
              (<SafeText text={q.allowedBy.map((p) => p.name).join(", ")} />)
            </>
          )}
          .{mine ? " You allowed it; someone else must allow it too." : ""} Any deny denies it at once.
        </span>
      )}
    </Banner>
  );
}
