import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { channelAllowRefusal, DIFF_LINE, HIGH_RISK_LINE, NOT_SHOWN_LINE } from "./card-allow";

/** A pending permission request as a channel sees it; `over` changes its tool call or the approval. */
function request(toolCall: Record<string, unknown>, over: Partial<Approval> = {}): Approval {
  const base = { type: "permission", risk: "normal", snapshot: { toolCall: { toolCallId: "c1", ...toolCall } } };
  return { ...base, ...over } as unknown as Approval;
}

describe("channelAllowRefusal", () => {
  it("offers Allow on a card whose title is shown whole", () => {
    expect(channelAllowRefusal(request({ title: "Run npm test" }), "tool_title")).toBeNull();
  });

  it.each([
    ["a high-risk request", request({ title: "git push -f" }, { risk: "high" }), "tool_title", HIGH_RISK_LINE],
    ["a generic lock screen", request({ title: "Run npm test" }), "generic", NOT_SHOWN_LINE],
    ["a title the SDK elided", request({ title: "Bash: curl …" }), "tool_title", NOT_SHOWN_LINE],
    ["a title longer than a lock screen shows", request({ title: "x".repeat(81) }), "tool_title", NOT_SHOWN_LINE],
    ["no title", request({}), "tool_title", NOT_SHOWN_LINE],
    ["a diff", request({ title: "Edit a.ts", content: [{ type: "diff", path: "a.ts" }] }), "tool_title", DIFF_LINE],
  ] as const)("offers none for %s, and says why", (_, approval, lockScreen, line) => {
    expect(channelAllowRefusal(approval, lockScreen)).toBe(line);
  });

  it("offers none for a truncated request", () => {
    const cut = request({ title: "Run npm test" });
    const truncated = { ...cut, snapshot: { ...cut.snapshot, truncated: { bytesNotStored: 10 } } } as Approval;
    expect(channelAllowRefusal(truncated, "tool_title")).toBe(NOT_SHOWN_LINE);
  });
});
