/**
 * Slack's shapes as Tapgate reads them (the Events API envelope, an Interactivity `block_actions`
 * payload, an OAuth v2 callback, the Web API's answers), and what a Tapgate card's buttons carry.
 * Only the fields Tapgate uses are named; Slack adds fields freely, so objects are loose.
 * Shared by the Worker, the tests and the fake Slack the tests run.
 */
import { z } from "zod";

const slackId = z.string().min(1).max(64);

/** What each button of a card carries (its `value`): the request it decides, as it was shown. */
export const slackButtonValueSchema = z.object({
  approvalId: z.string().min(1).max(100),
  requestHash: z.string().min(1).max(128),
});
export type SlackButtonValue = z.infer<typeof slackButtonValueSchema>;

/** The `action_id`s of a card's buttons. */
export const SLACK_ACTIONS = {
  allowOnce: "tapgate_allow_once",
  deny: "tapgate_deny",
  open: "tapgate_open",
} as const;

/** An Interactivity request's `payload` (form field), for a tap on a card's button. */
export const slackBlockActionsSchema = z.looseObject({
  type: z.literal("block_actions"),
  team: z.looseObject({ id: slackId }).nullable(),
  user: z.looseObject({ id: slackId }),
  channel: z.looseObject({ id: slackId }).optional(),
  actions: z.array(z.looseObject({ action_id: z.string().max(255), value: z.string().max(2000).optional() })).min(1),
});
export type SlackBlockActions = z.infer<typeof slackBlockActionsSchema>;

/** A direct message to the bot (`message.im`): how a member sends their link code. */
export const slackDirectMessageSchema = z.looseObject({
  type: z.literal("message"),
  channel_type: z.literal("im"),
  channel: slackId,
  user: slackId,
  text: z.string().max(40_000).default(""),
});

/** An Events API request: the URL check at setup, or an event from an installed workspace. */
export const slackEventEnvelopeSchema = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("url_verification"), challenge: z.string().min(1).max(500) }),
  z.looseObject({ type: z.literal("event_callback"), team_id: slackId, event: z.looseObject({ type: z.string() }) }),
]);

/** Where Slack sends the installer back: a code and our `state`, or an error (they declined). */
export const slackOAuthCallbackSchema = z.object({
  code: z.string().min(1).max(500).optional(),
  state: z.string().max(1000).optional(),
  error: z.string().max(200).optional(),
});

/** `oauth.v2.access`: the bot token and the workspace it belongs to. */
export const slackOAuthAccessSchema = z.looseObject({
  ok: z.literal(true),
  access_token: z.string().startsWith("xoxb-").max(500),
  bot_user_id: slackId.optional(),
  team: z.looseObject({ id: slackId, name: z.string().max(500).optional() }),
});

/** Every Web API answer: `{ok: true, …}` or `{ok: false, error}`. */
export const slackAnswerSchema = z.looseObject({ ok: z.boolean(), error: z.string().max(200).optional() });

/** `chat.postMessage` and `chat.update`: where the message is and its timestamp (its id). */
export const slackMessageRefSchema = z.looseObject({
  ok: z.literal(true),
  channel: slackId,
  ts: z.string().min(1).max(64),
});

/** `conversations.open`: the DM channel with a user. */
export const slackConversationSchema = z.looseObject({ ok: z.literal(true), channel: z.looseObject({ id: slackId }) });

/** A team channel an admin picks for cards (else each person gets them as a DM). */
export const slackTargetBodySchema = z.object({
  channelId: z
    .string()
    .regex(/^[CG][A-Z0-9]{8,20}$/, "a Slack channel id, like C0123456789")
    .nullable(),
});
