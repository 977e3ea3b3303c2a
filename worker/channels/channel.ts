/**
 * The contract every outside channel (Slack, Telegram, PagerDuty) implements, and what the rest
 * of the Worker may ask of one. A channel is one more way an escalation step reaches people
 * (`via: "slack" | "telegram" | "pagerduty"`) and, for Slack and Telegram, one more place a
 * linked member may answer — with the same guarantees as a tap in the app (the decider is a
 * linked member with a deciding role, the answer names the `requestHash` that was shown, it is
 * decided exactly once by the request's gate, and a high-risk allow still needs the passkey).
 *
 * Owns: the types (`ChannelAdapter`, `ChannelCard`, `ChannelEnding`, `ChannelTarget`,
 * `ChannelFailure`). Does not own: the durable queue of posts and their updates
 * (`worker/hub/channel-posts.ts`), stored installs and links (`worker/db/channels.ts`), sealing
 * tokens (`secret-box.ts`), deciding (`worker/team/channel-decision.ts` → `decideApproval`), or
 * any one platform's API (`slack/`, `telegram/`, `pagerduty/` beside this file).
 */
import type { Channel } from "../../sdk/src/human/channels";
import type { Env } from "../types";

export type { Channel };

/**
 * What a channel shows of a request: never more than the team's lock-screen policy allows
 * (`text` is `lockScreenTitle`'s), never tool arguments, never a secret.
 */
export interface ChannelCard {
  teamId: string;
  approvalId: string;
  /** The hash of the request as shown: a button carries it, and a tap decides only that request. */
  requestHash: string;
  sessionId: string;
  /** The lock-screen text, already cut to the team's policy. */
  text: string;
  /** A high-risk request (PagerDuty's severity). */
  highRisk: boolean;
  /**
   * Why the card offers no **Allow once**, as its line on the card (`channelAllowRefusal`): a
   * high-risk request, or a card that does not show the whole request; null: Allow is offered.
   */
  noAllow: string | null;
  /** The card in the app (`${APP_ORIGIN}/approvals/:id`). */
  link: string;
  expiresAt: number;
}

/** How a request ended, for the message that showed it ("Allowed by Ada on Slack", "Expired"). */
export interface ChannelEnding {
  state: "allowed" | "denied" | "expired" | "cancelled";
  /** One line for people: who decided and where, or why it ended without a human. */
  text: string;
}

/**
 * Where one post goes. `userId`: the member it is for (a DM or a linked chat), absent for a
 * team-wide place (a Slack channel the admin picked, the team's PagerDuty service).
 */
export interface ChannelTarget {
  userId?: string;
  /** The platform's address: a Slack user or channel id, a Telegram chat id, "routing-key". */
  address: string;
}

/** A post or update that failed; `retryable` ones are tried again with backoff, others end the post. */
export class ChannelFailure extends Error {
  constructor(
    readonly retryable: boolean,
    message: string,
  ) {
    super(message);
    this.name = "ChannelFailure";
  }
}

/** One platform, as the hub's post queue drives it. Every call is bounded by a timeout. */
export interface ChannelAdapter {
  readonly channel: Channel;
  /** Whether this deployment has the channel's settings; when not, its endpoints answer 404. */
  configured(env: Env): boolean;
  /** The places a ladder step reaches for these people of the team (their links, the team's place). */
  targets(env: Env, teamId: string, userIds: string[]): Promise<ChannelTarget[]>;
  /** Posts the card; resolves with the reference `end` needs to update it (a message ts, a dedup key). */
  post(env: Env, target: ChannelTarget, card: ChannelCard): Promise<{ ref: string }>;
  /** Updates what `post` showed once the request ended (chat.update, editMessageText, a resolve event). */
  end(env: Env, target: ChannelTarget, ref: string, card: ChannelCard, ending: ChannelEnding): Promise<void>;
  /**
   * Where a member hands the bot their one-time link code, for a platform with such a link
   * (Telegram's deep link `https://t.me/<bot>?start=<code>`); absent: the code is typed to the bot.
   */
  linkUrl?(env: Env, code: string): Promise<string>;
}
