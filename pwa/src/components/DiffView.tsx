import { useMemo } from "preact/hooks";
import { unifiedDiff } from "../diff";
import { SafeText } from "./SafeText";

const MARK = { equal: " ", delete: "−", insert: "+" } as const;
const SPOKEN = { delete: "removed: ", insert: "added: " } as const;

/**
 * A `diff` content block as a unified diff with line numbers. `withheld` (the reason) means the
 * old text was kept back on the agent's machine: the file is not new, only its old text is unknown.
 */
export function DiffView({
  path,
  oldText,
  newText,
  withheld = null,
}: {
  path: string;
  oldText: string | null;
  newText: string;
  withheld?: string | null;
}) {
  const hunks = useMemo(() => unifiedDiff(oldText, newText), [oldText, newText]);
  return (
    <figure class="diff" data-testid="diff">
      <figcaption class="diff-path">
        <SafeText text={path} />
        {withheld !== null ? (
          <span class="tag warn" data-testid="diff-withheld">
            old content withheld
          </span>
        ) : oldText === null || oldText === "" ? (
          <span class="tag">new file</span>
        ) : null}
      </figcaption>
      {withheld !== null && (
        <p class="muted small diff-note" data-testid="diff-withheld-reason">
          The file's current content was not sent (<SafeText text={withheld} />
          ). Below is the whole new content, not a change against it.
        </p>
      )}
      {hunks.length === 0 ? (
        <p class="muted">No changes.</p>
      ) : (
        <div class="diff-scroll">
          <table class="diff-table">
            {hunks.map((h) => (
              <tbody key={`${h.oldStart}:${h.newStart}`}>
                <tr class="diff-hunk">
                  <td colSpan={4}>
                    @@ −{h.oldStart},{h.oldCount} +{h.newStart},{h.newCount} @@
                  </td>
                </tr>
                {h.lines.map((l) => (
                  <tr key={`${l.oldNo}:${l.newNo}`} class={`diff-${l.op}`} data-testid={`diff-${l.op}`}>
                    <td class="ln">{l.oldNo ?? ""}</td>
                    <td class="ln">{l.newNo ?? ""}</td>
                    <td class="mark" aria-hidden="true">
                      {MARK[l.op]}
                    </td>
                    <td class="code">
                      {l.op !== "equal" && <span class="visually-hidden">{SPOKEN[l.op]}</span>}
                      <SafeText text={l.text} />
                    </td>
                  </tr>
                ))}
              </tbody>
            ))}
          </table>
        </div>
      )}
    </figure>
  );
}
