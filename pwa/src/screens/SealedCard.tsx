/**
 * The card of a private request this device did not open (docs/threat-model.md "Private
 * mode"): altered on the way, or sealed without this device's key. Nothing of its content shows;
 * only Deny is offered (the decision still binds `requestHash`), and the session can be stopped.
 *
 * Owns: that card. Does not own: the opening (private/open.ts) or the card of a readable
 * request (ApprovalCard.tsx).
 */
import { useState } from "preact/hooks";
import type { ApprovalView } from "../api";
import { canDecide } from "../api";
import { Banner } from "../components/Banner";
import { Countdown } from "../components/Countdown";
import { OptionButtons } from "../components/OptionButtons";
import { Outcome } from "../components/Outcome";
import { PrivateTag, SealedNotice } from "../components/PrivateNotes";
import { ReasonField } from "../components/ReasonField";
import { SafeText } from "../components/SafeText";
import { StopSessionButton } from "../components/SessionStop";
import { dateTime } from "../format";
import type { PrivateState } from "../private/use-private";
import { useMe } from "../viewer";

type Option = ApprovalView["options"][number];

export function SealedCard({
  approval,
  state,
  busy,
  notice,
  onChoose,
  embedded,
}: {
  approval: ApprovalView;
  state: PrivateState;
  busy: string | null;
  notice: { tone: "error" | "warn" | "ok"; text: string } | null;
  onChoose: (o: Option, reason?: string) => void;
  embedded: boolean;
}) {
  const me = useMe();
  const [reason, setReason] = useState("");
  const sealed = approval.sealed;
  const denies = approval.options.filter((o) => o.kind.startsWith("reject"));
  return (
    <article
      class={embedded ? "card in-panel" : "screen card"}
      data-testid="screen-approval"
      data-state={approval.state}
    >
      <header class="card-head">
        <h1 data-testid="card-title">Private request</h1>
        <PrivateTag state={state} />
        {approval.state === "pending" && <Countdown expiresAt={approval.expiresAt} testId="card-countdown" />}
      </header>
      {sealed && <SealedNotice state={state} sealed={sealed} me={me} />}
      <p class="muted small break" data-testid="card-id">
        Asked {dateTime(approval.createdAt)} · request {approval.id}
      </p>
      <div class="decide" data-testid="decide">
        {notice && (
          <Banner tone={notice.tone} testId="decision-notice">
            <SafeText text={notice.text} />
          </Banner>
        )}
        {approval.state !== "pending" ? (
          <Outcome approval={approval} />
        ) : canDecide(me?.role) && state !== "opening" ? (
          <>
            <ReasonField value={reason} onInput={setReason} />
            <p class="allow-refused" data-testid="allow-refused">
              This device cannot show what the agent asked, so only deny remains.
            </p>
            <OptionButtons options={denies} busy={busy} onChoose={(o) => onChoose(o, reason.trim() || undefined)} />
          </>
        ) : null}
        <p class="card-stop" data-testid="card-stop">
          <StopSessionButton sessionId={approval.sessionId} reason={reason} />
        </p>
      </div>
    </article>
  );
}
