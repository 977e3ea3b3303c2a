import { type ComponentChildren, Fragment } from "preact";
import type { ApprovalView } from "../api";
import { optionWords } from "../format";
import { SafeText } from "./SafeText";

type Option = ApprovalView["options"][number];

/** The adapter's `_meta.permission` words for an option (its title and description), or "". */
const agentSays = (o: Option) => [o.permission?.title, o.permission?.description].filter(Boolean).join(" — ");

const sameWords = (a: string, b: string) => a.trim().toLowerCase() === b.trim().toLowerCase();

/**
 * One big button per offered option, in the order the agent offered them. Label and colour come
 * from the option's `kind` (allow green, reject red); the agent's own wording is secondary text
 * under it, marked as the agent's, and only when it says something else; so are the adapter's
 * `_meta.permission` words for the option.
 */
export function OptionButtons({
  options,
  busy,
  onChoose,
  besideAllowOnce,
}: {
  options: Option[];
  busy: string | null;
  onChoose: (o: Option) => void;
  /** Shown right after the first `allow_once` button (the card's "Allow for 1 h"). */
  besideAllowOnce?: ComponentChildren;
}) {
  const allowOnce = options.find((o) => o.kind === "allow_once");
  return (
    <div class="options" data-testid="options">
      {options.map((o) => {
        const words = optionWords(o.kind, o.optionId);
        const beside = o === allowOnce && besideAllowOnce && <Fragment key="beside">{besideAllowOnce}</Fragment>;
        return [
          <button
            key={o.optionId}
            type="button"
            class={`option ${words.tone}`}
            disabled={busy !== null}
            aria-busy={busy === o.optionId}
            onClick={() => onChoose(o)}
            data-testid={`option-${o.optionId}`}
            data-kind={o.kind}
          >
            <span data-testid="option-label">{words.label}</span>
            {o.kind.endsWith("_always") && <span class="option-note">remembered for this session</span>}
            {o.name && !sameWords(o.name, words.label) && (
              <span class="option-agent" data-testid="option-agent-name">
                the agent calls it “<SafeText text={o.name} />”
              </span>
            )}
            {agentSays(o) && (
              <span class="option-agent" data-testid="option-agent-description">
                the agent says “<SafeText text={agentSays(o)} />”
              </span>
            )}
          </button>,
          beside,
        ];
      })}
    </div>
  );
}
