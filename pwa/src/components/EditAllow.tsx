/**
 * "Edit and allow" on a card (docs/human-api.md "Edit and allow"): for a request whose agent
 * takes edited input, the decider changes the command (a text field), a written file's new
 * content, or any tool input (JSON), sees the diff against what was asked, and allows that.
 * Also the record of an edited allow: the diff between the input asked for and the one allowed.
 *
 * Owns: the editor, its check before sending (`editProblem`, the gate's own rule) and the diffs.
 * Does not own: whether the request may be edited (`acceptsEdits`, `sdk/src/edit-input.ts`),
 * sending the decision or its step-up (`step-up.ts`).
 */
import { useState } from "preact/hooks";
import { editableInput, editFieldOf, editProblem, editText, type ToolInput } from "../../../sdk/src/edit-input";
import type { ApprovalView } from "../api";
import { DiffView } from "./DiffView";
import { SafeText } from "./SafeText";

/** The edited input from the editor's text, or why it cannot be sent. */
function editedFrom(original: ToolInput, field: "command" | "content" | null, text: string): ToolInput | string {
  if (field !== null) return { ...original, [field]: text };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return "This is not valid JSON.";
  }
  return editProblem(original, parsed) ?? (parsed as ToolInput);
}

/** The button and, once opened, the editor with its diff and "Allow with this edit". */
export function EditAllow({
  approval,
  busy,
  onAllow,
}: {
  approval: ApprovalView;
  busy: string | null;
  onAllow: (updatedInput: ToolInput) => void;
}) {
  const original = editableInput(approval.snapshot) ?? {};
  const { field, label } = editFieldOf(original);
  const before = editText(original, field);
  const [text, setText] = useState<string | null>(null);
  if (text === null) {
    return (
      <button
        type="button"
        class="button secondary"
        data-testid="edit-allow"
        disabled={busy !== null}
        onClick={() => setText(before)}
      >
        Edit and allow
      </button>
    );
  }
  const edited = editedFrom(original, field, text);
  const problem = typeof edited === "string" ? edited : null;
  const unchanged = text === before;
  return (
    <section class="edit-allow" data-testid="edit-editor">
      <label class="field">
        <span>{label}</span>
        <textarea
          data-testid="edit-input"
          rows={field === "command" ? 3 : 10}
          spellcheck={false}
          value={text}
          onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        />
      </label>
      {problem ? (
        <p class="error small" role="alert" data-testid="edit-problem">
          <SafeText text={problem} />
        </p>
      ) : (
        <DiffView path={`${label}: asked → allowed`} oldText={before} newText={text} />
      )}
      <div class="edit-allow-actions">
        <button
          type="button"
          class="button primary"
          data-testid="edit-allow-send"
          disabled={busy !== null || problem !== null || unchanged}
          onClick={() => typeof edited !== "string" && onAllow(edited)}
        >
          Allow with this edit
        </button>
        <button type="button" class="button secondary" data-testid="edit-cancel" onClick={() => setText(null)}>
          Cancel edit
        </button>
      </div>
    </section>
  );
}

/** An allow with edited input, on the card and in history: what was asked against what was allowed. */
export function EditedDiff({ approval }: { approval: ApprovalView }) {
  const original = editableInput(approval.snapshot);
  if (!approval.editedInput || !original) return null;
  const { field, label } = editFieldOf(original);
  return (
    <section data-testid="edited-diff">
      <h2 class="small">Allowed with edited input</h2>
      <DiffView
        path={`${label}: asked → allowed`}
        oldText={editText(original, field)}
        newText={editText(approval.editedInput, field)}
      />
      <p class="muted small break">
        request {approval.requestHash.slice(0, 12)}… · edited input {approval.editedInputHash?.slice(0, 12)}…
      </p>
    </section>
  );
}
