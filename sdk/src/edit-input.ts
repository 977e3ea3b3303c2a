/**
 * "Edit, then allow" (docs/human-api.md "Edit and allow"): which requests a decider may edit,
 * what the edited input must look like, and how the card presents the edit. Shared, pure and
 * environment-neutral: the gate checks an edit with `editProblem` (`400 invalid_request`), the
 * card checks it with the same function before sending.
 *
 * Owns: the edit capability's name on a request (`_meta.tapgate.acceptsEdits`), the tool input an
 * edit replaces (`toolCall.rawInput`), the shape rule, and which editor the card offers. Does not
 * own: whether the edit is allowed at all (the gate: the option, the risk, the step-up), or how
 * an agent applies it (each agent's answer: `_meta.tapgate.updatedInput`, the Claude hooks' `updatedInput`).
 */

/** A tool's input: a JSON object (what Claude Code's `tool_input` and an MCP call's arguments are). */
export type ToolInput = Record<string, unknown>;

/** The largest edited input, as canonical JSON bytes: it is stored beside the request (D1 and the gate). */
export const EDITED_INPUT_BYTES = 64 * 1024;

const isObject = (v: unknown): v is ToolInput => typeof v === "object" && v !== null && !Array.isArray(v);

/** A JSON value's kind: `string`, `number`, `boolean`, `null`, `array` or `object`. */
export function jsonKind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/** The tool input an edit replaces: the snapshot's `toolCall.rawInput` when it is a JSON object, else none. */
export function editableInput(snapshot: { toolCall: Record<string, unknown> }): ToolInput | undefined {
  const raw = snapshot.toolCall.rawInput;
  return isObject(raw) ? raw : undefined;
}

/**
 * Whether a decider may edit this request's input before allowing: its agent said it runs an
 * allow's `updatedInput` (`_meta.tapgate.acceptsEdits: true` on the request, kept in the
 * snapshot's `meta`) and the tool call's input is a JSON object.
 */
export function acceptsEdits(snapshot: { toolCall: Record<string, unknown>; meta?: Record<string, unknown> }): boolean {
  const tapgate = snapshot.meta?.tapgate;
  return isObject(tapgate) && tapgate.acceptsEdits === true && editableInput(snapshot) !== undefined;
}

/**
 * Why `edited` is not an edit of `original`, or null when it is. The shape rule: an object with
 * exactly the original's keys; each value of the original's JSON kind (`string`, `number`,
 * `boolean`, `null`, `array`, `object`); nested objects by the same rule; an array's items each
 * of the kind (and, for objects, the shape) of the original array's first item, and an
 * originally empty array stays empty. Values themselves may change freely. The message names
 * the path, never the value.
 */
export function editProblem(original: unknown, edited: unknown, path = "updatedInput"): string | null {
  const [was, is] = [jsonKind(original), jsonKind(edited)];
  if (was !== is) return `${path} must be ${article(was)}, as in the request (not ${article(is)})`;
  if (Array.isArray(original) && Array.isArray(edited)) return arrayProblem(original, edited, path);
  if (!isObject(original) || !isObject(edited)) return null;
  const missing = Object.keys(original).find((k) => !Object.hasOwn(edited, k));
  if (missing !== undefined) return `${path}.${missing} is missing: keep every key of the request's input`;
  const added = Object.keys(edited).find((k) => !Object.hasOwn(original, k));
  if (added !== undefined) return `${path}.${added} is not in the request's input: add no keys`;
  for (const key of Object.keys(original)) {
    const problem = editProblem(original[key], edited[key], `${path}.${key}`);
    if (problem) return problem;
  }
  return null;
}

function arrayProblem(original: unknown[], edited: unknown[], path: string): string | null {
  if (original.length === 0) {
    return edited.length === 0 ? null : `${path} must stay empty, as in the request`;
  }
  for (const [i, item] of edited.entries()) {
    const problem = editProblem(original[0], item, `${path}[${i}]`);
    if (problem) return problem;
  }
  return null;
}

const article = (kind: string) => (kind === "array" || kind === "object" ? `an ${kind}` : `a ${kind}`);

/** Which editor the card offers: the command's text, a written file's new content, or the whole input as JSON. */
export type EditField = { field: "command" | "content"; label: string } | { field: null; label: string };

export function editFieldOf(input: ToolInput): EditField {
  if (typeof input.command === "string") return { field: "command", label: "Command" };
  if (typeof input.content === "string" && typeof input.file_path === "string") {
    return { field: "content", label: "New content" };
  }
  return { field: null, label: "Tool input (JSON)" };
}

/** A tool input as the diff shows it: the one field edited as its text, else the whole input as indented JSON. */
export function editText(input: ToolInput, field: EditField["field"]): string {
  return field !== null && typeof input[field] === "string" ? input[field] : JSON.stringify(input, null, 2);
}
