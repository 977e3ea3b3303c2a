/** Building blocks the dashboard screens share: loading state, page head, filters, side panel, copy button. */
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { ApiError } from "../api";
import { Banner } from "../components/Banner";
import type { Paged } from "../paged";

export interface Loaded<T> {
  data: T | null;
  error: ApiError | null;
  loading: boolean;
  reload: () => Promise<void>;
  setData: (update: (prev: T | null) => T | null) => void;
}

/** Runs `fetcher` on mount and whenever `deps` change; the latest answer wins. */
export function useLoad<T>(fetcher: () => Promise<T>, deps: unknown[] = []): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const latest = useRef(0);
  // The caller names what the fetch depends on.
  const reload = useCallback(async () => {
    const mine = ++latest.current;
    setLoading(true);
    try {
      const d = await fetcher();
      if (mine !== latest.current) return;
      setData(d);
      setError(null);
    } catch (e) {
      if (mine === latest.current) setError(e as ApiError);
    } finally {
      if (mine === latest.current) setLoading(false);
    }
  }, deps);
  useEffect(() => void reload(), [reload]);
  return { data, error, loading, reload, setData: (fn) => setData((prev) => fn(prev)) };
}

export function PageHead({
  title,
  sub,
  actions,
}: {
  title: string;
  sub?: ComponentChildren;
  actions?: ComponentChildren;
}) {
  return (
    <header class="page-head">
      <div>
        <h1>{title}</h1>
        {sub && <p class="muted page-sub">{sub}</p>}
      </div>
      {actions && <div class="page-actions">{actions}</div>}
    </header>
  );
}

/** A failed load in words: offline, forbidden for this role, or the server's message. */
export function LoadError({ error, testId, onRetry }: { error: ApiError; testId: string; onRetry?: () => void }) {
  const text = error.offline
    ? "Offline — this shows when you are back online."
    : error.status === 403
      ? "Your role in this team does not allow this."
      : error.message;
  return (
    <Banner tone={error.offline ? "warn" : "error"} testId={error.offline ? "offline-banner" : testId}>
      {text}{" "}
      {onRetry && !error.offline && error.status !== 403 && (
        <button type="button" class="link-button" onClick={onRetry}>
          Retry
        </button>
      )}
    </Banner>
  );
}

export function Empty({ title, children, testId }: { title: string; children?: ComponentChildren; testId: string }) {
  return (
    <div class="empty-state" data-testid={testId}>
      <p class="empty-title">{title}</p>
      {children && <p class="muted">{children}</p>}
    </div>
  );
}

export function FilterSelect({
  label,
  value,
  onChange,
  options,
  testId,
  all = "All",
}: {
  label: string;
  value: string;
  onChange: (v: string) => void;
  options: Array<{ value: string; label: string }>;
  testId: string;
  all?: string;
}) {
  return (
    <label class="filter">
      <span>{label}</span>
      <select value={value} onChange={(e) => onChange(e.currentTarget.value)} data-testid={testId}>
        <option value="">{all}</option>
        {options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    </label>
  );
}

/** The right-hand panel the board and history open a request in; Escape closes it. */
export function SidePanel({
  onClose,
  children,
  testId,
  label,
}: {
  onClose: () => void;
  children: ComponentChildren;
  testId: string;
  label: string;
}) {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") onClose();
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, [onClose]);
  return (
    <aside class="side-panel" aria-label={label} data-testid={testId}>
      <div class="side-panel-bar">
        <span class="muted small">{label}</span>
        <button type="button" class="icon-button" onClick={onClose} aria-label="Close" data-testid="panel-close">
          <svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true">
            <path d="M6 6l12 12 M18 6L6 18" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" />
          </svg>
        </button>
      </div>
      <div class="side-panel-body">{children}</div>
    </aside>
  );
}

export function CopyButton({ text, testId, label = "Copy" }: { text: string; testId: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied(true);
      setTimeout(() => setCopied(false), 2000);
    } catch {
      // No clipboard permission: the text is selectable beside the button.
    }
  };
  return (
    <button type="button" class="button secondary compact" onClick={copy} data-testid={testId}>
      {copied ? "Copied" : label}
    </button>
  );
}

/** A value shown once (a key, an invite link): read-only, selected on focus, with a copy button beside it. */
export function CopyField({
  text,
  testId,
  copyTestId,
  label,
}: {
  text: string;
  testId: string;
  copyTestId: string;
  label: string;
}) {
  return (
    <div class="copy-row">
      <input readOnly value={text} class="mono" onFocus={(e) => e.currentTarget.select()} data-testid={testId} />
      <CopyButton text={text} testId={copyTestId} label={label} />
    </div>
  );
}

/** The test ids of a `ShownOnce` panel's parts. */
interface ShownOnceIds {
  panel: string;
  value: string;
  copy: string;
  done: string;
}

/**
 * A secret shown once (an API key, a webhook's signing secret): what to do now, the value with a
 * copy button, how to use it, and "I have copied it", which hides it for good.
 */
export function ShownOnce({
  ids,
  lead,
  value,
  copyLabel,
  use,
  onDone,
}: {
  ids: ShownOnceIds;
  lead: ComponentChildren;
  value: string;
  copyLabel: string;
  use: ComponentChildren;
  onDone: () => void;
}) {
  return (
    <div class="panel created" data-testid={ids.panel}>
      <p>{lead}</p>
      <CopyField text={value} testId={ids.value} copyTestId={ids.copy} label={copyLabel} />
      <p class="muted small">
        {use}{" "}
        <button type="button" class="link-button" onClick={onDone} data-testid={ids.done}>
          I have copied it
        </button>
      </p>
    </div>
  );
}

export function RoleBadge({ role }: { role: string }) {
  return (
    <span class={`role-badge role-${role}`} data-testid="role-badge">
      {role}
    </span>
  );
}

export function StateBadge({ state }: { state: string }) {
  return (
    <span class={`state-badge state-${state}`} data-testid="state-badge">
      {state}
    </span>
  );
}

/** "12 May, 14:03" for table cells; the full date in the tooltip. */
export function shortDate(at: number): string {
  return new Date(at).toLocaleString([], { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" });
}

/** A latency for tables: "840 ms", "12 s", "3 min 5 s". */
export function latency(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const m = Math.floor(ms / 60_000);
  const s = Math.round((ms % 60_000) / 1000);
  return s ? `${m} min ${s} s` : `${m} min`;
}

export function agentName(agent: { name: string; version?: string } | string | null | undefined): string | null {
  if (!agent) return null;
  if (typeof agent === "string") return agent;
  return agent.version ? `${agent.name} ${agent.version}` : agent.name;
}

/** The dashboard's table: scrolls sideways in its wrapper; `head` is the header row's cells. */
export function DataTable({
  testId,
  head,
  children,
  class: cls = "table",
}: {
  testId: string;
  head: ComponentChildren;
  children: ComponentChildren;
  class?: string;
}) {
  return (
    <div class="table-wrap">
      <table class={cls} data-testid={testId}>
        <thead>
          <tr>{head}</tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** The header cell over a row's buttons: named for screen readers only. */
export function ActionsHead() {
  return (
    <th class="actions-col">
      <span class="visually-hidden">Actions</span>
    </th>
  );
}

/**
 * A destructive button that asks first: the first click shows `confirmLabel` and Cancel. `onConfirm`
 * gets `close`, to call when the question should go away again (the row may simply disappear instead).
 */
export function ConfirmButton({
  label,
  confirmLabel,
  title,
  busy,
  testId,
  confirmTestId,
  onConfirm,
}: {
  label: ComponentChildren;
  confirmLabel: ComponentChildren;
  title?: string;
  busy: boolean;
  testId: string;
  confirmTestId: string;
  onConfirm: (close: () => void) => void;
}) {
  const [confirming, setConfirming] = useState(false);
  const close = () => setConfirming(false);
  return confirming ? (
    <span class="confirm">
      <button
        type="button"
        class="button danger compact"
        disabled={busy}
        onClick={() => onConfirm(close)}
        data-testid={confirmTestId}
      >
        {confirmLabel}
      </button>
      <button type="button" class="link-button" onClick={close}>
        Cancel
      </button>
    </span>
  ) : (
    <button
      type="button"
      class="button secondary compact"
      onClick={() => setConfirming(true)}
      title={title}
      data-testid={testId}
    >
      {label}
    </button>
  );
}

/** Under a paged table: what is shown (`children`), "Loading…", or the button for the next page. */
export function Pager({
  list,
  children,
}: {
  list: Pick<Paged<unknown>, "cursor" | "loading" | "load">;
  children?: ComponentChildren;
}) {
  const { cursor, loading, load } = list;
  return (
    <div class="pager">
      {children}
      {loading && <span class="muted">Loading…</span>}
      {cursor && !loading && (
        <button
          type="button"
          class="button secondary compact"
          onClick={() => void load(cursor)}
          data-testid="load-more"
        >
          Load more
        </button>
      )}
    </div>
  );
}
