import type { ApprovalView } from "../api";
import { isAllow } from "../format";
import { SafeText } from "./SafeText";

type Option = ApprovalView["options"][number];

/** One big button per offered option, allow green and reject red, in the order the agent offered them. */
export function OptionButtons({
  options,
  busy,
  onChoose,
}: {
  options: Option[];
  busy: string | null;
  onChoose: (o: Option) => void;
}) {
  return (
    <div class="options" data-testid="options">
      {options.map((o) => (
        <button
          key={o.optionId}
          type="button"
          class={`option ${isAllow(o.kind) ? "allow" : "reject"}`}
          disabled={busy !== null}
          aria-busy={busy === o.optionId}
          onClick={() => onChoose(o)}
          data-testid={`option-${o.optionId}`}
          data-kind={o.kind}
        >
          <SafeText text={o.name} />
          {o.kind.endsWith("_always") && <span class="option-note">remembered for this session</span>}
        </button>
      ))}
    </div>
  );
}
