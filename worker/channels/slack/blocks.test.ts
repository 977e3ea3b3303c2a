import { describe, expect, it } from "vitest";
import { SLACK_ACTIONS, slackButtonValueSchema } from "../../../sdk/src/human/slack";
import type { ChannelCard } from "../channel";
import { escapeSlackText, HIGH_RISK_LINE, slackCardMessage, slackEndedMessage } from "./blocks";

const card: ChannelCard = {
  teamId: "team_1",
  approvalId: "apr_1",
  requestHash: "h".repeat(64),
  sessionId: "sess_1",
  text: "Run <!channel> & npm test",
  highRisk: false,
  noAllow: null,
  link: "https://tapgate.test/approvals/apr_1",
  expiresAt: 1,
};

type Element = { action_id: string; value?: string; url?: string; text: { text: string } };
const buttonsOf = (blocks: object[]) =>
  (blocks.find((b) => (b as { type: string }).type === "actions") as { elements: Element[] }).elements;

describe("slackCardMessage", () => {
  it("shows the lock-screen text as plain text, with Allow once / Deny / Open in Tapgate", () => {
    const message = slackCardMessage(card);
    expect(message.blocks[0]).toEqual({ type: "section", text: { type: "plain_text", text: card.text, emoji: false } });
    expect(message.text).toBe("Tapgate: Run &lt;!channel&gt; &amp; npm test");
    const buttons = buttonsOf(message.blocks);
    expect(buttons.map((b) => b.text.text)).toEqual(["Allow once", "Deny", "Open in Tapgate"]);
    expect(buttons.map((b) => b.action_id)).toEqual([SLACK_ACTIONS.allowOnce, SLACK_ACTIONS.deny, SLACK_ACTIONS.open]);
    expect(buttons[2]?.url).toBe(card.link);
    for (const b of buttons.slice(0, 2)) {
      expect(slackButtonValueSchema.parse(JSON.parse(b.value ?? ""))).toEqual({
        approvalId: "apr_1",
        requestHash: card.requestHash,
      });
    }
  });

  it("gives a high-risk request no Allow button, and says it needs the passkey", () => {
    const message = slackCardMessage({ ...card, highRisk: true, noAllow: HIGH_RISK_LINE });
    expect(buttonsOf(message.blocks).map((b) => b.text.text)).toEqual(["Deny", "Open in Tapgate"]);
    expect(JSON.stringify(message.blocks)).toContain(HIGH_RISK_LINE);
    expect(JSON.stringify(message.blocks)).not.toContain(SLACK_ACTIONS.allowOnce);
  });
});

describe("slackEndedMessage", () => {
  it("shows how it ended, with no decision button left", () => {
    const message = slackEndedMessage(card, { state: "allowed", text: "Allowed by Ada on Slack" });
    expect(JSON.stringify(message.blocks)).toContain("Allowed by Ada on Slack");
    expect(buttonsOf(message.blocks).map((b) => b.action_id)).toEqual([SLACK_ACTIONS.open]);
  });
});

describe("escapeSlackText", () => {
  it("escapes Slack's control characters", () => {
    expect(escapeSlackText("<@U1> & <https://x|y>")).toBe("&lt;@U1&gt; &amp; &lt;https://x|y&gt;");
  });
});
