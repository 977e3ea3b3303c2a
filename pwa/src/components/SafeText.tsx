import { useMemo, useState } from "preact/hooks";
import { DEFAULT_LINE_LIMIT, toSafeText } from "../../../sdk/src/safe-text";

/**
 * Agent text, rendered as text nodes only (never HTML), with unsafe characters shown as tokens
 * and long lines cut behind a "Show all" button. `block` keeps line breaks (code, JSON, commands);
 * `whole` never cuts (what is about to be allowed, e.g. a batch's commands).
 */
export function SafeText({
  text,
  block = false,
  whole = false,
  testId,
}: {
  text: string;
  block?: boolean;
  whole?: boolean;
  testId?: string;
}) {
  const [all, setAll] = useState(whole);
  const safe = useMemo(() => toSafeText(text, all ? null : DEFAULT_LINE_LIMIT), [text, all]);
  const Tag = block ? "pre" : "span";
  return (
    <>
      <Tag class={block ? "safe safe-block" : "safe"} dir="ltr" data-testid={testId}>
        {safe.segments.map((s, i) =>
          s.kind === "text" ? (
            s.text
          ) : s.kind === "escape" ? (
            <span key={i} class="esc" title={s.name} data-testid="escaped-char">
              ⟨{s.label}⟩
            </span>
          ) : (
            <span key={i} class="cut">
              … {s.hidden.toLocaleString()} more characters
            </span>
          ),
        )}
      </Tag>
      {!whole && (safe.hidden > 0 || all) && (
        <button type="button" class="link-button" onClick={() => setAll(!all)} data-testid="show-all">
          {all ? "Show less" : `Show all (${safe.hidden.toLocaleString()} more characters)`}
        </button>
      )}
    </>
  );
}
