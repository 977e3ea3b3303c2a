/**
 * Signed webhooks (owners and admins): add an endpoint (URL and events; its secret shown once,
 * with a copy button), rotate its secret, delete it, and each endpoint's recent deliveries.
 */
import { useState } from "preact/hooks";
import { api, isAdmin, WEBHOOK_EVENTS, type Webhook, type WebhookDelivery, type WebhookEvent } from "../api";
import { useNow } from "../clock";
import { Banner } from "../components/Banner";
import { Field } from "../components/Field";
import { SafeText } from "../components/SafeText";
import { ago, dateTime } from "../format";
import { useAction } from "../use-action";
import { useMe } from "../viewer";
import { ActionsHead, ConfirmButton, DataTable, Empty, LoadError, PageHead, ShownOnce, shortDate, useLoad } from "./ui";

/** What each event carries, in words. */
const EVENT_WORDS: Record<WebhookEvent, string> = {
  "approval.requested": "a request waits for a decision",
  "approval.resolved": "a request ended: allowed, denied, cancelled or expired",
  "approval.escalated": "an escalation step ran",
  "rule.created": "a standing rule was made",
  "rule.ended": "a standing rule was ended",
  "member.changed": "a member joined, changed role or was removed",
  "audit.appended": "every audit entry, with its chain hash (for a SIEM)",
};

export function Webhooks() {
  const me = useMe();
  const hooks = useLoad(() => api.webhooks(), []);
  const [shown, setShown] = useState<{ id: string; secret: string; rotated: boolean } | null>(null);
  const list = hooks.data?.webhooks ?? [];
  if (me && !isAdmin(me.role)) {
    return (
      <section class="screen dash" data-testid="screen-webhooks">
        <PageHead title="Webhooks" sub="Only owners and admins manage webhooks." />
      </section>
    );
  }
  const reveal = (secret: { id: string; secret: string }, rotated: boolean) => {
    setShown({ ...secret, rotated });
    void hooks.reload();
  };
  return (
    <section class="screen dash" data-testid="screen-webhooks">
      <PageHead
        title="Webhooks"
        sub="Tapgate posts the events you pick to your URL, signed per Standard Webhooks, retried for 24 hours, in order."
      />
      <AddWebhook onAdded={(s) => reveal(s, false)} />
      {shown && (
        <ShownOnce
          ids={{
            panel: "webhook-secret",
            value: "webhook-secret-value",
            copy: "webhook-secret-copy",
            done: "webhook-secret-dismiss",
          }}
          lead={
            <>
              <strong>Copy this signing secret now:</strong> it is shown only once
              {shown.rotated ? "; deliveries are signed with it from now on." : "."}
            </>
          }
          value={shown.secret}
          copyLabel="Copy secret"
          use={
            <>
              Verify each delivery with it (the <code>standardwebhooks</code> package).
            </>
          }
          onDone={() => setShown(null)}
        />
      )}
      {hooks.error && <LoadError error={hooks.error} testId="webhooks-error" onRetry={() => void hooks.reload()} />}
      {hooks.data && list.length === 0 && (
        <Empty title="No webhooks yet" testId="webhooks-empty">
          Add a URL above to stream approvals, rules, member changes or the whole audit log to your own service.
        </Empty>
      )}
      {list.map((hook) => (
        <Endpoint
          key={hook.id}
          hook={hook}
          onRotated={(s) => reveal(s, true)}
          onDeleted={() => {
            if (shown?.id === hook.id) setShown(null);
            hooks.setData((prev) => (prev ? { webhooks: prev.webhooks.filter((w) => w.id !== hook.id) } : prev));
          }}
        />
      ))}
    </section>
  );
}

function AddWebhook({ onAdded }: { onAdded: (s: { id: string; secret: string }) => void }) {
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<WebhookEvent[]>([]);
  const { busy, error, run } = useAction();
  const toggle = (event: WebhookEvent, on: boolean) =>
    setEvents((prev) => (on ? [...prev, event] : prev.filter((e) => e !== event)));
  const submit = (e: Event) => {
    e.preventDefault();
    return run(async () => {
      onAdded(await api.createWebhook(url.trim(), events));
      setUrl("");
      setEvents([]);
    });
  };
  return (
    <form class="panel" onSubmit={submit} data-testid="webhook-add-form">
      <Field label="URL" class="filter grow">
        <input
          required
          type="url"
          maxLength={2000}
          value={url}
          placeholder="https://siem.example.com/tapgate"
          onInput={(e) => setUrl(e.currentTarget.value)}
          data-testid="webhook-url"
        />
      </Field>
      <fieldset class="webhook-events">
        <legend>Events</legend>
        {WEBHOOK_EVENTS.map((event) => (
          <label class="check" key={event}>
            <input
              type="checkbox"
              checked={events.includes(event)}
              onChange={(e) => toggle(event, e.currentTarget.checked)}
              data-testid={`webhook-event-${event}`}
            />
            <code>{event}</code> <span class="muted small">{EVENT_WORDS[event]}</span>
          </label>
        ))}
      </fieldset>
      <button
        type="submit"
        class="button primary compact"
        disabled={busy || !url.trim() || events.length === 0}
        data-testid="webhook-add"
      >
        {busy ? "Adding…" : "Add webhook"}
      </button>
      {error && (
        <Banner tone="error" testId="webhook-error">
          {error}
        </Banner>
      )}
    </form>
  );
}

function Endpoint({
  hook,
  onRotated,
  onDeleted,
}: {
  hook: Webhook;
  onRotated: (s: { id: string; secret: string }) => void;
  onDeleted: () => void;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const act = async (work: () => Promise<void>, close: () => void) => {
    setBusy(true);
    setError(null);
    try {
      await work();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
      close();
    }
  };
  return (
    <div class="panel" data-testid={`webhook-${hook.id}`}>
      <div class="webhook-head">
        <div>
          <div class="strong mono clip" data-testid="webhook-row-url">
            <SafeText text={hook.url} />
          </div>
          <div class="muted small">
            {hook.events.join(", ")} · added {shortDate(hook.createdAt)} · secret from {shortDate(hook.secretAt)}
          </div>
        </div>
        <span class="actions-col">
          <ConfirmButton
            label="Rotate secret"
            confirmLabel="Make a new secret"
            busy={busy}
            onConfirm={(close) => void act(async () => onRotated(await api.rotateWebhook(hook.id)), close)}
            testId="webhook-rotate"
            confirmTestId="webhook-rotate-confirm"
          />{" "}
          <ConfirmButton
            label="Delete"
            confirmLabel="Delete"
            busy={busy}
            onConfirm={(close) =>
              void act(async () => {
                await api.deleteWebhook(hook.id);
                onDeleted();
              }, close)
            }
            testId="webhook-delete"
            confirmTestId="webhook-delete-confirm"
          />
        </span>
      </div>
      {error && (
        <Banner tone="error" testId="webhook-row-error">
          {error}
        </Banner>
      )}
      {hook.deliveries.length === 0 ? (
        <p class="muted small" data-testid="webhook-no-deliveries">
          No deliveries yet.
        </p>
      ) : (
        <Deliveries deliveries={hook.deliveries} />
      )}
    </div>
  );
}

const STATE_CLASS: Record<WebhookDelivery["state"], string> = {
  pending: "state-pending",
  delivered: "state-allowed",
  failed: "state-denied",
};

function Deliveries({ deliveries }: { deliveries: WebhookDelivery[] }) {
  const now = useNow();
  return (
    <DataTable
      testId="webhook-deliveries"
      head={
        <>
          <th>Event</th>
          <th>State</th>
          <th>Tries</th>
          <th>Last answer</th>
          <th>Last try</th>
          <ActionsHead />
        </>
      }
    >
      {deliveries.map((d) => (
        <tr key={d.id} data-testid="webhook-delivery">
          <td class="mono small" title={d.id}>
            {d.type}
          </td>
          <td>
            <span class={`state-badge ${STATE_CLASS[d.state]}`}>{d.state}</span>
          </td>
          <td>{d.attempts}</td>
          <td class="small clip" data-testid="webhook-delivery-answer">
            {d.lastError ?? (d.lastStatus === null ? "—" : `status ${d.lastStatus}`)}
          </td>
          <td class="muted nowrap" title={d.lastAttemptAt ? dateTime(d.lastAttemptAt) : undefined}>
            {d.lastAttemptAt ? ago(d.lastAttemptAt, now) : "not yet"}
          </td>
          <td class="muted small nowrap">{d.nextAt !== null && d.nextAt > now ? `next ${shortDate(d.nextAt)}` : ""}</td>
        </tr>
      ))}
    </DataTable>
  );
}
