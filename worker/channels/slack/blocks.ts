/**
 * The Slack message of a card (Block Kit): the lock-screen text and nothing more, buttons
 * **Allow once** / **Deny** / **Open in Tapgate**; a high-risk request has no Allow button and says
 * it needs the passkey in Tapgate. Each decision button's `value` names the approval and the
 * `requestHash` that was shown. The message a card becomes when its request ends has no buttons.
 *
 * Owns: the message shapes (pure). Does not own: what the text may say (the post queue cuts it
 * to the team's lock-screen policy before it gets here), sending (`web-api.ts`).
 */
import { SLACK_ACTIONS, type SlackButtonValue } from "../../../sdk/src/human/slack";
import type { ChannelCard, ChannelEnding } from "../channel";

/** What `chat.postMessage` and `chat.update` take besides the channel. */
export interface SlackMessage {
  /** The notification's text (Slack parses it as mrkdwn, so it is escaped). */
  text: string;
  /** Absent for a plain reply (the bot's answer to a link code). */
  blocks?: object[];
}

export { HIGH_RISK_LINE } from "../card-allow";

/** Slack's three control characters in text it formats (https://api.slack.com/reference/surfaces/formatting#escaping). */
export function escapeSlackText(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** Shown as typed: a `plain_text` object formats nothing (no mentions, no links). */
const plain = (text: string) => ({ type: "plain_text", text, emoji: false });

function button(label: string, actionId: string, value: SlackButtonValue, style?: "primary" | "danger") {
  return {
    type: "button",
    text: plain(label),
    action_id: actionId,
    value: JSON.stringify(value),
    ...(style && { style }),
  };
}

/** The card as posted: the request's lock-screen text, its buttons. */
export function slackCardMessage(card: ChannelCard): Required<SlackMessage> {
  const value: SlackButtonValue = { approvalId: card.approvalId, requestHash: card.requestHash };
  const open = { type: "button", text: plain("Open in Tapgate"), action_id: SLACK_ACTIONS.open, url: card.link };
  const buttons = [
    ...(card.noAllow === null ? [button("Allow once", SLACK_ACTIONS.allowOnce, value, "primary")] : []),
    button("Deny", SLACK_ACTIONS.deny, value, "danger"),
    open,
  ];
  return {
    text: escapeSlackText(`Tapgate: ${card.text}`),
    blocks: [
      { type: "section", text: plain(card.text) },
      ...(card.noAllow === null ? [] : [{ type: "context", elements: [plain(card.noAllow)] }]),
      { type: "actions", block_id: "tapgate_decide", elements: buttons },
    ],
  };
}

/** The card once its request ended: what it asked, how it ended ("Allowed by Ada on Slack"), a link. */
export function slackEndedMessage(card: ChannelCard, ending: ChannelEnding): Required<SlackMessage> {
  return {
    text: escapeSlackText(`Tapgate: ${card.text}: ${ending.text}`),
    blocks: [
      { type: "section", text: plain(card.text) },
      { type: "context", elements: [plain(ending.text)] },
      {
        type: "actions",
        block_id: "tapgate_ended",
        elements: [{ type: "button", text: plain("Open in Tapgate"), action_id: SLACK_ACTIONS.open, url: card.link }],
      },
    ],
  };
}
