/**
 * The Slack part of the Channels screen: "Add to Slack" for owners and admins (OAuth v2 through
 * `GET /v1/channels/slack/install`, back here with `?slack=installed|cancelled|failed`), the team
 * channel cards go to (else each person's DM with the bot), and how a member's link code reaches
 * the bot. Linking itself and removing are the screen's own (`Channels.tsx`).
 */
import { useState } from "preact/hooks";
import type { ChannelStatus } from "../../../sdk/src/human/channels";
import { api } from "../api";
import { Banner } from "../components/Banner";
import { Field } from "../components/Field";
import { useAction } from "../use-action";

const OUTCOMES: Record<string, { tone: "ok" | "warn" | "error"; text: string }> = {
  installed: { tone: "ok", text: "Slack is added. Members can now link their Slack user." },
  cancelled: { tone: "warn", text: "Slack was not added: the install was declined on Slack." },
  failed: {
    tone: "error",
    text: "Slack was not added: Slack refused the install, or that workspace is another team's.",
  },
};

/** What "Add to Slack" came back with, once (from the URL Slack's callback redirected to). */
function installOutcome() {
  const outcome = new URLSearchParams(location.search).get("slack");
  return outcome ? OUTCOMES[outcome] : undefined;
}

export function SlackSetup({
  status,
  admin,
  onChange,
}: {
  status: ChannelStatus;
  admin: boolean;
  onChange: () => void;
}) {
  const [outcome] = useState(installOutcome);
  return (
    <div class="channel-setup" data-testid="slack-setup">
      {outcome && (
        <Banner tone={outcome.tone} testId="slack-install-outcome">
          {outcome.text}
        </Banner>
      )}
      {admin && !status.connected && (
        <a class="button primary compact" href="/v1/channels/slack/install" data-testid="slack-add">
          Add to Slack
        </a>
      )}
      {admin && status.connected && <SlackTarget target={status.target ?? null} onDone={onChange} />}
      {status.connected && (
        <p class="muted" data-testid="slack-link-hint">
          To link your Slack user, get a code below and send it to the Tapgate bot in a direct message.
        </p>
      )}
    </div>
  );
}

/** A team channel for every card (the bot invited there), or blank: each person's DM. */
function SlackTarget({ target, onDone }: { target: string | null; onDone: () => void }) {
  const [channelId, setChannelId] = useState(target ?? "");
  const { busy, error, run } = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    return run(async () => {
      await api.setSlackTarget(channelId.trim() || null);
      onDone();
    });
  };
  return (
    <form class="inline-form" onSubmit={submit} data-testid="slack-target-form">
      <Field label="Team channel (blank: a DM to each person)" class="filter grow">
        <input
          autocomplete="off"
          pattern="[CG][A-Z0-9]{8,20}"
          value={channelId}
          placeholder="C0123456789"
          onInput={(e) => setChannelId(e.currentTarget.value)}
          data-testid="slack-target"
        />
      </Field>
      <button type="submit" class="button compact" disabled={busy} data-testid="slack-target-save">
        {busy ? "Saving…" : "Save"}
      </button>
      {error && (
        <Banner tone="error" testId="slack-target-error">
          {error}
        </Banner>
      )}
    </form>
  );
}
