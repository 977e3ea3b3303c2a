/**
 * An elicitation on its card: the agent's question, then either the form its `requestedSchema`
 * describes (labels, descriptions, defaults, choices, required marks, checked as you type with the
 * same rules the Worker applies) or, in URL mode, the full URL as text with its host set apart,
 * opened only when tapped. Answers are `accept` (with the form's content), `decline`, `cancel`.
 *
 * Owns: drawing the question and collecting the answer. Does not own: sending it (ApprovalCard)
 * or the rules (`sdk/src/elicitation-form.ts`).
 */
import { useMemo, useState } from "preact/hooks";
import { checkContent, type FormField, formFields, valueProblem } from "../../../sdk/src/elicitation-form";
import type { ElicitationAction, ElicitationContent } from "../../../sdk/src/elicitation-protocol";
import type { ApprovalView } from "../api";
import { Banner } from "./Banner";
import { SafeText } from "./SafeText";

export type ElicitationAnswer = { action: ElicitationAction; content?: ElicitationContent };

type Asked = NonNullable<ApprovalView["snapshot"]["elicitation"]>;

export function ElicitationQuestion({
  asked,
  pending,
  busy,
  onAnswer,
}: {
  asked: Asked;
  pending: boolean;
  busy: string | null;
  onAnswer: (answer: ElicitationAnswer) => void;
}) {
  return (
    <section class="card-section" data-testid="elicitation" data-mode={asked.mode}>
      <h2>The agent asks</h2>
      <SafeText text={asked.message} block testId="elicitation-message" />
      <Banner tone="warn" testId="elicitation-no-secrets">
        Never type passwords, API keys or other secrets here: what you enter goes to the agent as plain text.
      </Banner>
      {asked.mode === "url" && asked.url ? (
        <UrlQuestion url={asked.url} pending={pending} busy={busy} onAnswer={onAnswer} />
      ) : asked.requestedSchema ? (
        <FormQuestion schema={asked.requestedSchema} pending={pending} busy={busy} onAnswer={onAnswer} />
      ) : null}
    </section>
  );
}

function UrlQuestion({
  url,
  pending,
  busy,
  onAnswer,
}: {
  url: string;
  pending: boolean;
  busy: string | null;
  onAnswer: (a: ElicitationAnswer) => void;
}) {
  // The gate only holds absolute https:// URLs without user info, so the host is the real one.
  const host = new URL(url).host;
  return (
    <div class="elicit-url">
      <p>
        The agent wants you to open a page on <strong data-testid="elicitation-host">{host}</strong>. Check that this is
        the site you expect before you go there.
      </p>
      <SafeText text={url} block testId="elicitation-url" />
      {pending && (
        <div class="options">
          {/* Opened only by this tap, in a new tab that cannot reach back here and is told nothing of where it came from. */}
          <a
            class="option allow"
            href={url}
            target="_blank"
            rel="noopener noreferrer"
            referrerpolicy="no-referrer"
            data-testid="elicitation-open"
            onClick={() => onAnswer({ action: "accept" })}
          >
            Open {host}
          </a>
          <AnswerButtons busy={busy} onAnswer={onAnswer} />
        </div>
      )}
    </div>
  );
}

type Values = Record<string, string | boolean>;

/** What each field starts with: its default, as the control shows it. */
function initialValues(fields: FormField[]): Values {
  const values: Values = {};
  for (const f of fields) {
    if (f.input === "boolean") values[f.name] = f.default === true;
    else values[f.name] = f.default === undefined ? "" : String(f.default);
  }
  return values;
}

/** The content a form's controls hold: empty fields left out (a required one is then reported missing). */
function contentOf(fields: FormField[], values: Values): Record<string, unknown> {
  const content: Record<string, unknown> = {};
  for (const f of fields) {
    const v = values[f.name];
    if (f.input === "boolean") content[f.name] = v === true;
    else if (typeof v === "string" && v !== "")
      content[f.name] = f.input === "number" || f.input === "integer" ? Number(v) : v;
  }
  return content;
}

function FormQuestion({
  schema,
  pending,
  busy,
  onAnswer,
}: {
  schema: NonNullable<Asked["requestedSchema"]>;
  pending: boolean;
  busy: string | null;
  onAnswer: (a: ElicitationAnswer) => void;
}) {
  const fields = useMemo(() => formFields(schema), [schema]);
  const [values, setValues] = useState<Values>(() => initialValues(fields));
  const [touched, setTouched] = useState<Record<string, boolean>>({});
  const [submitted, setSubmitted] = useState(false);
  const content = contentOf(fields, values);
  const problemOf = (f: FormField) => {
    const v = content[f.name];
    if (v === undefined) return f.required ? "is required" : undefined;
    return valueProblem(f, v);
  };
  const submit = (e: Event) => {
    e.preventDefault();
    setSubmitted(true);
    const checked = checkContent(schema, content);
    if (checked.ok) onAnswer({ action: "accept", content: checked.content });
  };
  return (
    <form class="elicit-form" data-testid="elicitation-form" onSubmit={submit} noValidate>
      {fields.map((f) => {
        const problem = (touched[f.name] || submitted) && pending ? problemOf(f) : undefined;
        const set = (v: string | boolean) => {
          setValues((prev) => ({ ...prev, [f.name]: v }));
          setTouched((prev) => ({ ...prev, [f.name]: true }));
        };
        return (
          <div class="field" key={f.name} data-testid={`field-${f.name}`}>
            <FieldControl field={f} value={values[f.name]} disabled={!pending} onChange={set} />
            {f.description && (
              <span class="muted small">
                <SafeText text={f.description} />
              </span>
            )}
            {problem && (
              <span class="field-problem" role="alert" data-testid={`problem-${f.name}`}>
                <SafeText text={`${f.label} ${problem}`} />
              </span>
            )}
          </div>
        );
      })}
      {pending && (
        <div class="options">
          <button
            type="submit"
            class="option allow"
            disabled={busy !== null}
            aria-busy={busy === "accept"}
            data-testid="elicitation-submit"
          >
            Send answer
          </button>
          <AnswerButtons busy={busy} onAnswer={onAnswer} />
        </div>
      )}
    </form>
  );
}

function FieldControl({
  field: f,
  value,
  disabled,
  onChange,
}: {
  field: FormField;
  value: string | boolean | undefined;
  disabled: boolean;
  onChange: (v: string | boolean) => void;
}) {
  const id = `elicit-${f.name}`;
  const label = (
    <label for={id}>
      <SafeText text={f.label} />
      {f.required && <span class="muted"> (required)</span>}
    </label>
  );
  if (f.input === "boolean") {
    return (
      <span class="check">
        <input
          id={id}
          type="checkbox"
          checked={value === true}
          disabled={disabled}
          onChange={(e) => onChange(e.currentTarget.checked)}
        />
        {label}
      </span>
    );
  }
  if (f.input === "choice") {
    return (
      <>
        {label}
        <select
          id={id}
          value={String(value ?? "")}
          disabled={disabled}
          onChange={(e) => onChange(e.currentTarget.value)}
        >
          <option value="">{f.required ? "Choose…" : "(none)"}</option>
          {f.choices?.map((c) => (
            <option key={c.value} value={c.value} title={c.description}>
              {c.label}
            </option>
          ))}
        </select>
      </>
    );
  }
  // Plain text boxes (the keyboard follows `inputMode`): the form's own check reports a wrong value, not the browser.
  const inputMode =
    f.input === "integer" ? "numeric" : f.input === "number" ? "decimal" : f.format === "email" ? "email" : undefined;
  const placeholder =
    f.format === "date" ? "YYYY-MM-DD" : f.format === "date-time" ? "2026-01-31T09:30:00Z" : undefined;
  return (
    <>
      {label}
      <input
        id={id}
        type="text"
        inputMode={inputMode}
        value={String(value ?? "")}
        placeholder={placeholder}
        disabled={disabled}
        autoComplete="off"
        onInput={(e) => onChange(e.currentTarget.value)}
      />
    </>
  );
}

/** Decline and dismiss: the same on both modes. */
function AnswerButtons({ busy, onAnswer }: { busy: string | null; onAnswer: (a: ElicitationAnswer) => void }) {
  return (
    <>
      <button
        type="button"
        class="option reject"
        disabled={busy !== null}
        aria-busy={busy === "decline"}
        onClick={() => onAnswer({ action: "decline" })}
        data-testid="elicitation-decline"
      >
        Decline
      </button>
      <button
        type="button"
        class="option unknown"
        disabled={busy !== null}
        aria-busy={busy === "cancel"}
        onClick={() => onAnswer({ action: "cancel" })}
        data-testid="elicitation-cancel"
      >
        Dismiss
      </button>
    </>
  );
}
