/**
 * Standing rules: the team's active rules and those that ended in the last 7 days, with who
 * made each, until when, and how many requests it allowed; ending one (its creator, or an owner
 * or admin). What a rule matches is said by `describeMatch`, the same words as the card's preview.
 */
import { useState } from "preact/hooks";
import { describeMatch } from "../../../sdk/src/rules";
import { api, isAdmin, type Rule } from "../api";
import { useNow } from "../clock";
import { Banner } from "../components/Banner";
import { SafeText } from "../components/SafeText";
import { dateTime, shortDuration } from "../format";
import { useTeamPrivacy } from "../private/privacy";
import { useMe } from "../viewer";
import { ActionsHead, ConfirmButton, DataTable, Empty, LoadError, PageHead, shortDate, useLoad } from "./ui";

/** Where a rule stands at `now`. */
function standing(rule: Rule, now: number): "active" | "ended" | "expired" {
  if (rule.endedAt !== null) return "ended";
  return rule.expiresAt > now ? "active" : "expired";
}

export function Rules() {
  const rules = useLoad(() => api.rules(), []);
  const list = rules.data?.rules ?? [];
  const privacy = useTeamPrivacy(useMe());
  return (
    <section class="screen dash" data-testid="screen-rules">
      <PageHead
        title="Standing rules"
        sub="Each allows matching requests with no one asked, until it expires (at most 24 h) or is ended. Never a high-risk request. Make one from a request's card: Allow for 1 h."
      />
      {privacy === "private" && (
        <Banner tone="info" testId="rules-private">
          This team is private: Tapgate never sees a request's command, so a private request matches a rule only by an
          exact fingerprint made on the agent's machine (“Allow for 1 h” of exactly this request). Patterns need the
          plaintext and never match a private request.
        </Banner>
      )}
      {rules.error && <LoadError error={rules.error} testId="rules-error" onRetry={() => void rules.reload()} />}
      {rules.data && list.length === 0 && (
        <Empty title="No standing rules" testId="rules-empty">
          On a request's card, “Allow for 1 h” allows it and the same request again for an hour.
        </Empty>
      )}
      {list.length > 0 && (
        <DataTable
          testId="rules-table"
          head={
            <>
              <th>Allows</th>
              <th>Scope</th>
              <th>Made by</th>
              <th>Until</th>
              <th>Allowed</th>
              <th>Status</th>
              <ActionsHead />
            </>
          }
        >
          {list.map((r) => (
            <RuleRow
              key={r.id}
              rule={r}
              onEnded={(ended) =>
                rules.setData((prev) => (prev ? { rules: prev.rules.map((x) => (x.id === r.id ? ended : x)) } : prev))
              }
            />
          ))}
        </DataTable>
      )}
    </section>
  );
}

function RuleRow({ rule, onEnded }: { rule: Rule; onEnded: (rule: Rule) => void }) {
  const now = useNow();
  const me = useMe();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const state = standing(rule, now);
  const mayEnd = state === "active" && (rule.createdBy.userId === me?.user.id || isAdmin(me?.role));
  const end = async (close: () => void) => {
    setBusy(true);
    try {
      onEnded((await api.endRule(rule.id)).rule);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
      close();
    }
  };
  const until = rule.endedAt ?? rule.expiresAt;
  return (
    <tr data-testid={`rule-row-${rule.id}`} data-state={state} class={state === "active" ? undefined : "revoked"}>
      <td class="break">
        <SafeText text={describeMatch(rule.match, rule.scope)} testId="rule-match" />
        {rule.arguments !== null && (
          <SafeText text={`Exactly these arguments:\n${rule.arguments}`} block testId="rule-arguments" />
        )}
        {rule.note && (
          <span class="muted small">
            {" "}
            — <SafeText text={rule.note} />
          </span>
        )}
        {error && (
          <span class="row-error" role="alert">
            {error}
          </span>
        )}
      </td>
      <td>{rule.scope === "team" ? "Team" : "Own sessions"}</td>
      <td class="nowrap">{rule.createdBy.userId === me?.user.id ? "You" : rule.createdBy.name}</td>
      <td class="muted nowrap" title={dateTime(until)}>
        {state === "active" ? `in ${shortDuration(until - now)}` : shortDate(until)}
      </td>
      <td data-testid="rule-allowed">{rule.allowed}</td>
      <td>
        <span class={`state-badge state-${state === "active" ? "allowed" : "cancelled"}`} data-testid="rule-state">
          {state}
        </span>
      </td>
      <td class="actions-col">
        {mayEnd && (
          <ConfirmButton
            label="End"
            confirmLabel="End rule"
            busy={busy}
            testId={`rule-end-${rule.id}`}
            confirmTestId={`rule-end-confirm-${rule.id}`}
            onConfirm={(close) => void end(close)}
          />
        )}
      </td>
    </tr>
  );
}
