import { useMemo } from "preact/hooks";
import { unifiedDiff } from "../diff";
import { SafeText } from "./SafeText";

const MARK = { equal: " ", delete: "−", insert: "+" } as const;
const SPOKEN = { delete: "removed: ", insert: "added: " } as const;

/** A `diff` content block as a unified diff with line numbers. */
export function DiffView({ path, oldText, newText }: { path: string; oldText: string | null; newText: string }) {
  const hunks = useMemo(() => unifiedDiff(oldText, newText), [oldText, newText]);
  return (
    <figure class="diff" data-testid="diff">
      <figcaption class="diff-path">
        <SafeText text={path} />
        {oldText === null || oldText === "" ? <span class="tag">new file</span> : null}
      </figcaption>
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
