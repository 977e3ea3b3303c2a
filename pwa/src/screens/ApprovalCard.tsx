import { useEffect, useState } from "preact/hooks";
import { acceptsEdits, type ToolInput } from "../../../sdk/src/edit-input";
import { describeMatch } from "../../../sdk/src/rules";
import { containsUnsafeText } from "../../../sdk/src/safe-text";
import { traceIdOf } from "../../../sdk/src/trace";
import { type ApiError, type ApprovalView, api, canDecide, type RuleChoice } from "../api";
import { useClaimWhileOpen } from "../claim";
import { lookingWords, useLookers } from "../claims";
import { AgentPrompt } from "../components/AgentPrompt";
import { Banner } from "../components/Banner";
import { Countdown } from "../components/Countdown";
import { DeliveryList, EscalationTimeline, Section } from "../components/DeliveryStory";
import { DismissButton } from "../components/DismissButton";
import { EditAllow, EditedDiff } from "../components/EditAllow";
import { type ElicitationAnswer, ElicitationQuestion } from "../components/ElicitationQuestion";
import { KindIcon, kindLabel } from "../components/KindIcon";
import { OptionButtons } from "../components/OptionButtons";
import { Outcome } from "../components/Outcome";
import { PrivateTag } from "../components/PrivateNotes";
import { ReasonField } from "../components/ReasonField";
import { RiskBanner, RiskTag } from "../components/RiskNote";
import { RuleOffer } from "../components/RuleOffer";
import { SafeText } from "../components/SafeText";
import { StopSessionButton } from "../components/SessionStop";
import { asRecord, prettyJson, ToolContent } from "../components/ToolContent";
import { dateTime, describeApproval } from "../format";
import { useLiveEvents, useShowingCards } from "../live";
import { type PrivateState, readable, useSeen } from "../private/use-private";
import { Link } from "../router";
import { decideWithStepUp } from "../step-up";
import { useMe } from "../viewer";
import { SealedCard } from "./SealedCard";

/** The rule a card may make ("Allow for 1 h"). */
type CardRule = { expiresInMs: number; choice: RuleChoice };
type DecisionAnswer = Awaited<ReturnType<typeof api.decide>>;

type Notice = { tone: "error" | "warn" | "ok"; text: string } | null;

/** The card for one request: a screen of its own on the phone, or inline in the dashboard's side panel (`embedded`). */
export function ApprovalCard({ id, embedded = false }: { id: string; embedded?: boolean }) {
  const [approval, setApproval] = useState<ApprovalView | null>(null);
  const [loadError, setLoadError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [notice, setNotice] = useState<Notice>(null);
  const [withdrawn, setWithdrawn] = useState(false);

  const load = () =>
    api.approval(id).then(
      (a) => {
        setApproval(a);
        setLoadError(null);
      },
      (e: ApiError) => setLoadError(e),
    );
  // The card is keyed by id (app.tsx), so it loads once.
  useEffect(() => void load(), []);
  useShowingCards(approval?.state === "pending" ? [id] : []);

  useLiveEvents((e) => {
    if (e.type === "resync") void load();
    else if (e.type === "withdrawn" && e.approvalId === id) setWithdrawn(true);
    // Feed events may omit delivery; keep what the card already knows.
    else if ((e.type === "approval" || e.type === "resolved") && e.approval.id === id)
      setApproval((prev) => ({
        ...e.approval,
        delivery: e.approval.delivery ?? prev?.delivery,
        escalations: e.approval.escalations ?? prev?.escalations,
      }));
  });

  const me = useMe();
  useClaimWhileOpen(id, approval?.state === "pending" && canDecide(me?.role));
  // A private request is shown only as this device opened it: the agent's words, checked.
  const [seen] = useSeen(approval ? [approval] : []);

  /** With `rule`: allow once and make a standing rule from this request ("Allow for 1 h"). `reason`: words for the agent. */
  const choose = (option: Pick<ApprovalView["options"][number], "optionId">, rule?: CardRule, reason?: string) =>
    send(rule ? "rule" : option.optionId, (current) => decideWithStepUp(current, option.optionId, { rule, reason }));
  /** "Edit and allow": the allow option with the tool input the decider edited. */
  const allowEdited = (optionId: string, updatedInput: ToolInput, reason?: string) =>
    send("edit", (current) => decideWithStepUp(current, optionId, { reason, updatedInput }));
  const dismiss = (reason?: string) => send("dismiss", (current) => api.dismiss(id, current.requestHash, reason));
  const answer = (a: ElicitationAnswer) => send(a.action, (current) => api.answer(id, a, current.requestHash));

  const send = async (busyWith: string, decision: (current: ApprovalView) => Promise<DecisionAnswer>) => {
    if (!approval) return;
    setBusy(busyWith);
    setNotice(null);
    try {
      const decided = await decision(approval);
      setApproval((prev) => ({ ...decided, owner: prev?.owner, delivery: prev?.delivery }));
      if (decided.createdRule) {
        setNotice({ tone: "ok", text: `Allowed, and for 1 h: ${describeMatch(decided.createdRule.match)}` });
      }
    } catch (e) {
      const err = e as ApiError;
      const final = asRecord(err.body).approval as ApprovalView | undefined;
      if (final) setApproval(final);
      if (err.code === "request_changed") {
        setNotice({
          tone: "warn",
          text: "The request changed while you were reading it. Check it again before deciding.",
        });
      } else if (err.code === "rule_not_created" || !final) {
        setNotice({ tone: "error", text: err.message });
      }
    } finally {
      setBusy(null);
    }
  };

  if (loadError || withdrawn) {
    return (
      <section class={embedded ? "card in-panel" : "screen"} data-testid="screen-approval">
        {withdrawn ? (
          <Banner tone="warn" testId="approval-withdrawn">
            This request was withdrawn before it was held (its agent left, or its key was revoked): there is nothing to
            decide.
          </Banner>
        ) : (
          <Banner
            tone={loadError?.offline ? "warn" : "error"}
            testId={loadError?.offline ? "offline-banner" : "approval-error"}
          >
            {loadError?.status === 404
              ? "This request does not exist, or belongs to another team."
              : loadError?.message}
          </Banner>
        )}
        {!embedded && (
          <p>
            <Link href="/">Back to pending requests</Link>
          </p>
        )}
      </section>
    );
  }
  if (!approval || !seen) return <p class="muted center">Loading…</p>;
  if (!readable(seen)) {
    return (
      <SealedCard
        approval={approval}
        state={seen.private}
        busy={busy}
        notice={notice}
        onChoose={(o, reason) => choose(o, undefined, reason)}
        embedded={embedded}
      />
    );
  }
  return (
    <Card
      approval={seen.approval}
      privateState={seen.private}
      busy={busy}
      notice={notice}
      onChoose={choose}
      onAllowEdited={allowEdited}
      onDismiss={dismiss}
      onAnswer={answer}
      embedded={embedded}
    />
  );
}

function Card({
  approval,
  privateState,
  busy,
  notice,
  onChoose,
  onAllowEdited,
  onDismiss,
  onAnswer,
  embedded,
}: {
  approval: ApprovalView;
  privateState: PrivateState;
  busy: string | null;
  notice: Notice;
  onChoose: (o: Pick<ApprovalView["options"][number], "optionId">, rule?: CardRule, reason?: string) => void;
  onAllowEdited: (optionId: string, updatedInput: ToolInput, reason?: string) => void;
  onDismiss: (reason?: string) => void;
  onAnswer: (a: ElicitationAnswer) => void;
  embedded: boolean;
}) {
  const me = useMe();
  const [reason, setReason] = useState("");
  const lookers = useLookers(approval.id, me?.user.id);
  const d = describeApproval(approval);
  const tc = approval.snapshot.toolCall;
  const session = approval.snapshot.session;
  const rawInput = tc.rawInput;
  const command = asRecord(rawInput).command;
  const content = Array.isArray(tc.content) ? tc.content : [];
  const locations = Array.isArray(tc.locations) ? tc.locations.map(asRecord) : [];
  const suspicious = containsUnsafeText(approval.snapshot) || containsUnsafeText(approval.options);
  // Only what was shown can be allowed: a cut request offers deny alone (the gate refuses an allow too).
  const { truncated } = approval.snapshot;
  // "Edit and allow": the agent takes edited input, the request was shown whole, and there is a
  // once-only allow. Never a private request's: the edit would go to the service in clear.
  const allowOnce = approval.options.find((o) => o.kind === "allow_once");
  const editable = !truncated && !privateState && allowOnce !== undefined && acceptsEdits(approval.snapshot);
  return (
    <article
      class={embedded ? "card in-panel" : "screen card"}
      data-testid="screen-approval"
      data-state={approval.state}
    >
      <header class="card-head">
        <span class="kind" data-testid="card-kind">
          <KindIcon kind={d.kind} /> {kindLabel(d.kind)}
        </span>
        <h1 data-testid="card-title">
          <SafeText text={d.title} />
        </h1>
        <RiskTag approval={approval} />
        <PrivateTag state={privateState} />
        {approval.state === "pending" && <Countdown expiresAt={approval.expiresAt} testId="card-countdown" />}
      </header>
      {approval.state === "pending" && lookers.length > 0 && (
        <p class="muted small" data-testid="card-lookers">
          <SafeText text={lookingWords(lookers)} />
        </p>
      )}

      {suspicious && (
        <Banner tone="warn" testId="unsafe-warning">
          This request contains hidden characters, control codes or very long lines. They are shown as ⟨…⟩ tokens or
          cut; read it carefully before allowing.
        </Banner>
      )}

      {approval.snapshot.truncated && (
        <Banner tone="warn" testId="card-truncated">
          truncated: {approval.snapshot.truncated.bytesNotStored} bytes not stored. This request was larger than the
          team stores; what you see is cut, so it cannot be allowed from here. Deny it; the agent can send less.
        </Banner>
      )}

      <dl class="facts" data-testid="card-session">
        <Fact label="Session" value={d.sessionTitle} />
        <Fact label="Agent" value={d.agent} />
        <Fact label="Host" value={session.host} />
        <Fact label="Directory" value={session.cwd} />
        <Fact label="Trace" value={traceIdOf(approval.snapshot.meta)} />
      </dl>

      {approval.snapshot.elicitation && (
        <ElicitationQuestion
          asked={approval.snapshot.elicitation}
          pending={approval.state === "pending" && canDecide(me?.role)}
          busy={busy}
          onAnswer={onAnswer}
        />
      )}
      <AgentPrompt meta={approval.snapshot.meta} />
      {typeof command === "string" && (
        <Section title="Command">
          <SafeText text={command} block testId="card-command" />
        </Section>
      )}
      {content.length > 0 && (
        <Section title="Content">
          <ToolContent blocks={content} />
        </Section>
      )}
      {locations.length > 0 && (
        <Section title="Locations">
          <ul class="plain" data-testid="card-locations">
            {locations.map((l, i) => (
              <li key={i}>
                <SafeText text={`${String(l.path ?? "?")}${typeof l.line === "number" ? `:${l.line}` : ""}`} />
              </li>
            ))}
          </ul>
        </Section>
      )}
      {rawInput !== undefined && (
        <Section title={typeof command === "string" ? "Full input" : "Input"}>
          <SafeText text={prettyJson(rawInput)} block testId="card-raw-input" />
        </Section>
      )}
      <EditedDiff approval={approval} />
      <AgentMeta request={approval.snapshot.meta} toolCall={tc._meta} subject={unknownSubject(approval)} />
      {approval.delivery && approval.delivery.length > 0 && <DeliveryList delivery={approval.delivery} />}
      <EscalationTimeline approval={approval} />

      <p class="muted small break" data-testid="card-id">
        Asked {dateTime(approval.createdAt)} · request {approval.id}
      </p>

      <div class="decide" data-testid="decide">
        <RiskBanner approval={approval} myUserId={me?.user.id} />
        {notice && (
          <Banner tone={notice.tone} testId="decision-notice">
            <SafeText text={notice.text} />
          </Banner>
        )}
        {approval.state === "pending" && !canDecide(me?.role) ? (
          <Banner tone="info" testId="viewer-note">
            You are a viewer in this team: you can follow this request, but only approvers can decide it.
          </Banner>
        ) : approval.state === "pending" ? (
          approval.type !== "elicitation" && (
            <>
              <ReasonField value={reason} onInput={setReason} />
              {truncated && (
                <p class="allow-refused" data-testid="allow-refused">
                  Too large to review here: {truncated.bytesNotStored} bytes not stored. Only deny remains.
                </p>
              )}
              <OptionButtons
                options={truncated ? approval.options.filter((o) => !o.kind.startsWith("allow")) : approval.options}
                busy={busy}
                onChoose={(o) => onChoose(o, undefined, reason.trim() || undefined)}
                besideAllowOnce={
                  <RuleOffer
                    approval={approval}
                    busy={busy}
                    onAllowWithRule={(optionId, rule) => onChoose({ optionId }, rule, reason.trim() || undefined)}
                  />
                }
              />
              {editable && allowOnce && (
                <EditAllow
                  approval={approval}
                  busy={busy}
                  onAllow={(input) => onAllowEdited(allowOnce.optionId, input, reason.trim() || undefined)}
                />
              )}
              <DismissButton busy={busy} onDismiss={() => onDismiss(reason.trim() || undefined)} />
            </>
          )
        ) : (
          <Outcome approval={approval} />
        )}
        {/* On every card, decided ones too: the agent may still be at work. Kept after the stop, to say what it did. */}
        <p class="card-stop" data-testid="card-stop">
          <StopSessionButton sessionId={approval.sessionId} reason={reason} />
        </p>
      </div>
    </article>
  );
}

/**
 * The agent's own `_meta` (on the request and on its tool call): whatever the agent chose to
 * say, in its words. It is not Tapgate's policy and nothing checked it, so the heading says so.
 */
function AgentMeta({ request, toolCall, subject }: { request: unknown; toolCall: unknown; subject: unknown }) {
  const blocks = [
    ["request", request],
    ["tool call", toolCall],
    ["subject", subject],
  ].filter(([, meta]) => Object.keys(asRecord(meta)).length > 0);
  if (blocks.length === 0) return null;
  return (
    <Section title="From the agent (unverified)">
      <p class="muted small">Extra data the agent attached. Tapgate did not check it; it is not the team's policy.</p>
      {blocks.map(([where, meta]) => (
        <div key={String(where)}>
          {blocks.length > 1 && <h3 class="small">On the {String(where)}</h3>}
          <SafeText text={prettyJson(meta)} block testId="card-meta" />
        </div>
      ))}
    </Section>
  );
}

/** An ACP v2 subject of a type Tapgate does not render (tool calls and commands are the card itself). */
function unknownSubject(approval: ApprovalView): unknown {
  const subject = asRecord(approval.snapshot.permission?.subject);
  return subject.type === "tool_call" || subject.type === "command" ? undefined : subject;
}

function Fact({ label, value }: { label: string; value: string | null }) {
  if (!value) return null;
  return (
    <>
      <dt>{label}</dt>
      <dd>
        <SafeText text={value} />
      </dd>
    </>
  );
}
