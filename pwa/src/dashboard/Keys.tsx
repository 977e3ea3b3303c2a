/** Agent API keys: mine, or the whole team's for owners and admins; create (shown once) and revoke. */
import { useState } from "preact/hooks";
import { type ApiKey, api, isAdmin } from "../api";
import { useNow } from "../clock";
import { Banner } from "../components/Banner";
import { Field } from "../components/Field";
import { SafeText } from "../components/SafeText";
import { ago, dateTime } from "../format";
import { useAction } from "../use-action";
import { useMe } from "../viewer";
import { ActionsHead, ConfirmButton, DataTable, Empty, LoadError, PageHead, ShownOnce, shortDate, useLoad } from "./ui";

export function Keys() {
  const me = useMe();
  const admin = isAdmin(me?.role);
  const [scope, setScope] = useState<"mine" | "team">("mine");
  const keys = useLoad(() => api.keys(scope), [scope]);
  const [created, setCreated] = useState<{ key: string; label: string } | null>(null);
  const list = keys.data?.keys ?? [];
  const owner = (k: ApiKey) => {
    const id = k.owner?.userId ?? k.userId;
    return id === me?.user.id ? "You" : (k.owner?.name ?? "—");
  };

  return (
    <section class="screen dash" data-testid="screen-keys">
      <PageHead
        title="API keys"
        sub="Agents connect with these keys. Revoking one denies its waiting requests and disconnects its sessions."
        actions={
          admin && (
            <fieldset class="segmented">
              <legend class="visually-hidden">Whose keys</legend>
              <button
                type="button"
                aria-pressed={scope === "mine"}
                onClick={() => setScope("mine")}
                data-testid="keys-mine"
              >
                Mine
              </button>
              <button
                type="button"
                aria-pressed={scope === "team"}
                onClick={() => setScope("team")}
                data-testid="keys-team"
              >
                Whole team
              </button>
            </fieldset>
          )
        }
      />
      <CreateKey
        onCreated={(k) => {
          setCreated(k);
          void keys.reload();
        }}
      />
      {created && (
        <ShownOnce
          ids={{ panel: "key-created", value: "key-value", copy: "key-copy", done: "key-dismiss" }}
          lead={
            <>
              <strong>Copy this key now:</strong> it is shown only once and cannot be recovered.
            </>
          }
          value={created.key}
          copyLabel="Copy key"
          use={
            <>
              Use it as <code>TAPGATE_API_KEY</code>, or sign in from a terminal with <code>npx tapgate login</code>.
            </>
          }
          onDone={() => setCreated(null)}
        />
      )}
      {keys.error && <LoadError error={keys.error} testId="keys-error" onRetry={() => void keys.reload()} />}
      {keys.data && list.length === 0 && (
        <Empty title="No API keys yet" testId="keys-empty">
          Create one above for each machine an agent runs on.
        </Empty>
      )}
      {list.length > 0 && (
        <DataTable
          testId="keys-table"
          head={
            <>
              <th>Label</th>
              {scope === "team" && <th>Owner</th>}
              <th>Prefix</th>
              <th>Created</th>
              <th>Last used</th>
              <th>Status</th>
              <ActionsHead />
            </>
          }
        >
          {list.map((k) => (
            <KeyRow
              key={k.id}
              apiKey={k}
              owner={scope === "team" ? owner(k) : null}
              onRevoked={(revokedAt) =>
                keys.setData((prev) =>
                  prev ? { keys: prev.keys.map((x) => (x.id === k.id ? { ...x, revokedAt } : x)) } : prev,
                )
              }
            />
          ))}
        </DataTable>
      )}
    </section>
  );
}

function CreateKey({ onCreated }: { onCreated: (k: { key: string; label: string }) => void }) {
  const [label, setLabel] = useState("");
  const { busy, error, run } = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    return run(async () => {
      const k = await api.createKey(label.trim());
      setLabel("");
      onCreated({ key: k.key, label: k.label });
    });
  };
  return (
    <form class="inline-form panel" onSubmit={submit} data-testid="key-create-form">
      <Field label="New key for" class="filter grow">
        <input
          required
          maxLength={100}
          value={label}
          placeholder="e.g. build server, Ada's laptop"
          onInput={(e) => setLabel(e.currentTarget.value)}
          data-testid="key-label"
        />
      </Field>
      <button type="submit" class="button primary compact" disabled={busy || !label.trim()} data-testid="key-create">
        {busy ? "Creating…" : "Create key"}
      </button>
      {error && (
        <Banner tone="error" testId="key-error">
          {error}
        </Banner>
      )}
    </form>
  );
}

function KeyRow({
  apiKey: k,
  owner,
  onRevoked,
}: {
  apiKey: ApiKey;
  owner: string | null;
  onRevoked: (at: number) => void;
}) {
  const now = useNow();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const revoke = async (close: () => void) => {
    setBusy(true);
    try {
      const r = (await api.revokeKey(k.id)) as { revokedAt?: number } | null;
      onRevoked(r?.revokedAt ?? Date.now());
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
      close();
    }
  };
  return (
    <tr data-testid={`key-row-${k.id}`} class={k.revokedAt ? "revoked" : undefined}>
      <td class="strong clip">
        <SafeText text={k.label} />
        {error && (
          <span class="row-error" role="alert">
            {error}
          </span>
        )}
      </td>
      {owner !== null && <td class="nowrap">{owner}</td>}
      <td class="mono small">{k.prefix}…</td>
      <td class="muted nowrap" title={dateTime(k.createdAt)}>
        {shortDate(k.createdAt)}
      </td>
      <td class="muted nowrap">{k.lastUsedAt ? ago(k.lastUsedAt, now) : "never"}</td>
      <td>
        {k.revokedAt ? (
          <span class="state-badge state-cancelled">revoked</span>
        ) : (
          <span class="state-badge state-allowed">active</span>
        )}
      </td>
      <td class="actions-col">
        {!k.revokedAt && (
          <ConfirmButton
            label="Revoke"
            confirmLabel="Revoke"
            busy={busy}
            onConfirm={(close) => void revoke(close)}
            testId="key-revoke"
            confirmTestId="key-revoke-confirm"
          />
        )}
      </td>
    </tr>
  );
}
