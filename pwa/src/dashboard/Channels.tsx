/**
 * Channels: where the team's escalation ladder can reach people besides the app (Slack, Telegram,
 * PagerDuty). Each channel is "not set up" (greyed, naming the settings this server lacks),
 * connected, or ready to connect; owners and admins connect and remove, every member who may
 * decide links their own account. The platforms' own connect buttons live in their sections.
 */

import { useState } from "preact/hooks";
import { CHANNEL_NAMES, type ChannelLinkCode, type ChannelStatus } from "../../../sdk/src/human/channels";
import { api, canDecide, isAdmin } from "../api";
import { Banner } from "../components/Banner";
import { Field } from "../components/Field";
import { withReauth } from "../reauth";
import { useAction } from "../use-action";
import { useMe } from "../viewer";
import { SlackSetup } from "./SlackChannel";
import { ConfirmButton, LoadError, PageHead, useLoad } from "./ui";

export function Channels() {
  const channels = useLoad(() => api.channels(), []);
  return (
    <section class="screen dash" data-testid="screen-channels">
      <PageHead
        title="Channels"
        sub="Escalation steps can also post to Slack, Telegram or PagerDuty. They show only what the lock screen shows, and a high-risk request can only be allowed in Tapgate, with your passkey."
      />
      {channels.error && (
        <LoadError error={channels.error} testId="channels-error" onRetry={() => void channels.reload()} />
      )}
      {channels.data?.channels.map((c) => (
        <ChannelPanel key={c.channel} status={c} onChange={() => void channels.reload()} />
      ))}
    </section>
  );
}

function ChannelPanel({ status, onChange }: { status: ChannelStatus; onChange: () => void }) {
  const me = useMe();
  const admin = isAdmin(me?.role);
  const name = CHANNEL_NAMES[status.channel];
  const remove = useAction();
  if (!status.setUp) {
    return (
      <div class="panel muted" data-testid={`channel-${status.channel}`} aria-disabled="true">
        <h2>{name}</h2>
        <p data-testid={`channel-${status.channel}-not-set-up`}>
          Not set up on this server: its operator sets {status.missing.join(", ")}.
        </p>
      </div>
    );
  }
  return (
    <div class="panel" data-testid={`channel-${status.channel}`}>
      <h2>{name}</h2>
      <p data-testid={`channel-${status.channel}-state`}>{status.connected ? "Connected" : "Not connected"}</p>
      {status.channel === "pagerduty" && admin && <PagerDutyForm connected={status.connected} onDone={onChange} />}
      {status.channel === "slack" && <SlackSetup status={status} admin={admin} onChange={onChange} />}
      {status.connected && admin && status.channel !== "telegram" && (
        <ConfirmButton
          label="Remove"
          confirmLabel={`Remove ${name}`}
          busy={remove.busy}
          testId={`channel-${status.channel}-remove`}
          confirmTestId={`channel-${status.channel}-remove-confirm`}
          onConfirm={(close) => void remove.run(() => api.removeChannel(status.channel).then(onChange)).finally(close)}
        />
      )}
      {remove.error && (
        <Banner tone="error" testId={`channel-${status.channel}-error`}>
          {remove.error}
        </Banner>
      )}
      {status.channel !== "pagerduty" && canDecide(me?.role) && <LinkArea status={status} onChange={onChange} />}
    </div>
  );
}

function PagerDutyForm({ connected, onDone }: { connected: boolean; onDone: () => void }) {
  const [key, setKey] = useState("");
  const { busy, error, run } = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    return run(async () => {
      await api.connectPagerDuty(key.trim());
      setKey("");
      onDone();
    });
  };
  return (
    <form class="inline-form" onSubmit={submit} data-testid="pagerduty-form">
      <Field label={connected ? "Replace the routing key" : "Events API v2 routing key"} class="filter grow">
        <input
          required
          autocomplete="off"
          pattern="[A-Za-z0-9]{32}"
          value={key}
          placeholder="32-character integration key"
          onInput={(e) => setKey(e.currentTarget.value)}
          data-testid="pagerduty-key"
        />
      </Field>
      <button type="submit" class="button primary compact" disabled={busy || !key.trim()} data-testid="pagerduty-save">
        {busy ? "Saving…" : "Save"}
      </button>
      {error && (
        <Banner tone="error" testId="pagerduty-error">
          {error}
        </Banner>
      )}
    </form>
  );
}

/** "Link my account": a one-time code (10 minutes) the member gives the bot. */
function LinkArea({ status, onChange }: { status: ChannelStatus; onChange: () => void }) {
  const [code, setCode] = useState<ChannelLinkCode | null>(null);
  const { busy, error, run } = useAction();
  const channel = status.channel;
  return (
    <div class="channel-link" data-testid={`channel-${channel}-link`}>
      {status.linked ? (
        <p>
          Your account is linked.{" "}
          <button
            type="button"
            class="link-button"
            disabled={busy}
            onClick={() => run(() => api.unlinkChannel(channel).then(onChange))}
            data-testid={`channel-${channel}-unlink`}
          >
            Unlink
          </button>
        </p>
      ) : (
        <button
          type="button"
          class="button compact"
          disabled={busy}
          onClick={() => run(async () => setCode(await withReauth(() => api.linkChannel(channel))))}
          data-testid={`channel-${channel}-link-start`}
        >
          Link my account
        </button>
      )}
      {code && (
        <p data-testid={`channel-${channel}-code`}>
          {code.url ? (
            <>
              <a href={code.url} target="_blank" rel="noopener noreferrer">
                Open the bot
              </a>{" "}
              and press Start within 10 minutes (the link works once).
            </>
          ) : (
            <>
              Give the bot this code within 10 minutes: <code>{code.code}</code>
            </>
          )}
        </p>
      )}
      {error && (
        <Banner tone="error" testId={`channel-${channel}-link-error`}>
          {error}
        </Banner>
      )}
    </div>
  );
}
