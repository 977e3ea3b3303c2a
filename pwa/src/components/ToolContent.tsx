import { DiffView } from "./DiffView";
import { SafeText } from "./SafeText";

/** ACP tool call content blocks: text, diffs, terminals; anything else as its JSON. */
export function ToolContent({ blocks }: { blocks: unknown[] }) {
  return (
    <>
      {blocks.map((block, i) => (
        <ContentBlock key={i} block={block} />
      ))}
    </>
  );
}

function ContentBlock({ block }: { block: unknown }) {
  const b = asRecord(block);
  if (b.type === "diff" && typeof b.path === "string" && typeof b.newText === "string") {
    return (
      <DiffView
        path={b.path}
        oldText={typeof b.oldText === "string" ? b.oldText : null}
        newText={b.newText}
        withheld={withheldReason(b)}
      />
    );
  }
  const inner = asRecord(b.content);
  if (b.type === "content" && inner.type === "text" && typeof inner.text === "string") {
    return <SafeText text={inner.text} block testId="content-text" />;
  }
  if (b.type === "terminal" && typeof b.terminalId === "string") {
    return (
      <p class="muted">
        Terminal output: <SafeText text={b.terminalId} />
      </p>
    );
  }
  return <SafeText text={prettyJson(block)} block testId="content-json" />;
}

/** `tapgate claude-hook` kept the old text back (`_meta.tapgate.oldTextWithheld`: why). */
function withheldReason(block: Record<string, unknown>): string | null {
  if (typeof block.oldText === "string") return null;
  const reason = asRecord(asRecord(block._meta).tapgate).oldTextWithheld;
  return typeof reason === "string" ? reason : null;
}

export function asRecord(value: unknown): Record<string, unknown> {
  return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** JSON as a person reads it; unparsable values say so rather than disappear. */
export function prettyJson(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return "(cannot be shown as JSON)";
  }
}
