/**
 * A tap on a channel's card (Slack's Allow once / Deny, Telegram's inline keyboard): the same
 * decision as a tap in the app, by the member the platform account is linked to, with their role
 * as D1 has it now, naming the `requestHash` the card showed. The gate decides exactly once and
 * checks the role and the team's `deciders` policy; a high-risk allow is never taken here (it
 * needs the passkey, in the app). The answer is one sentence for the tapper (an ephemeral reply,
 * a callback answer), never an error page.
 *
 * Owns: the sentences, and which option an answer means. Does not own: the decision
 * (`decideApproval` → the gate), the links (`channel-links.ts`), any platform's reply format.
 */

import type { ErrorCode } from "../../sdk/src/errors";
import { CHANNEL_NAMES, type Channel } from "../../sdk/src/human/channels";
import { channelAllowRefusal, HIGH_RISK_LINE } from "../channels/card-allow";
import { channelLinkRemoved, getTeamPolicy } from "../db";
import { DomainError } from "../errors";
import { approvalAtGate } from "../gate/api";
import type { Env } from "../types";
import { approvalGate, decideApproval } from "./approvals";
import { linkedMember } from "./channel-links";

export interface ChannelTap {
  channel: Channel;
  teamId: string;
  externalUserId: string;
  approvalId: string;
  requestHash: string;
  answer: "allow_once" | "deny";
}

export type ChannelTapResult = { ok: true; text: string } | { ok: false; text: string };

const OPTION_KIND = { allow_once: "allow_once", deny: "reject_once" } as const;

export const NEEDS_PASSKEY = "Needs your passkey: open in Tapgate";
/** An allow tapped on a card that does not show the whole request (`channelAllowRefusal`). */
export const NOT_SHOWN_HERE = "This card does not show the whole request: open in Tapgate to allow it";

/** The gate's refusals, as the tapper reads them. */
const REFUSALS: Partial<Record<ErrorCode, string>> = {
  role_may_not_decide: "Your role may not decide requests",
  not_session_owner: "Team policy lets only the session's owner decide",
  request_changed: "The request changed since this card was posted: open in Tapgate",
  already_decided: "Someone already decided this request",
  already_resolved: "This request has already ended",
  step_up_required: NEEDS_PASSKEY,
  request_truncated: "This request is too large to allow here: open in Tapgate",
  second_approver_required: "You already allowed this; another person must allow it too",
  option_not_offered: "This request does not offer that answer: open in Tapgate",
  not_found: "This request is no longer here",
};

export async function decideFromChannel(env: Env, tap: ChannelTap): Promise<ChannelTapResult> {
  const member = await linkedMember(env, tap.channel, tap.teamId, tap.externalUserId);
  if (!member) return refusal(await notLinkedSentence(env, tap));
  try {
    const pending = await approvalAtGate(approvalGate(env, tap.approvalId), tap.teamId, tap.approvalId);
    if (!pending) return refusal(REFUSALS.not_found ?? "");
    // A high-risk allow needs the passkey, and an allow only of what the card showed: the card's
    // own rule, applied again to the tap (a forged one, or a policy made stricter since the post).
    if (tap.answer === "allow_once") {
      const why = channelAllowRefusal(pending, (await getTeamPolicy(env.DB, tap.teamId)).policy.lockScreen);
      if (why === HIGH_RISK_LINE) return refusal(NEEDS_PASSKEY);
      if (why !== null) return refusal(NOT_SHOWN_HERE);
    }
    const option = pending.options.find((o) => o.kind === OPTION_KIND[tap.answer]);
    if (!option) return refusal(REFUSALS.option_not_offered ?? "");
    const decided = await decideApproval(env, {
      approvalId: tap.approvalId,
      teamId: tap.teamId,
      userId: member.userId,
      name: member.name,
      role: member.role,
      device: CHANNEL_NAMES[tap.channel],
      optionId: option.optionId,
      requestHash: tap.requestHash,
      via: tap.channel,
    });
    if (decided.state === "pending") return { ok: true, text: "Allowed by you; it waits for a second approver" };
    return { ok: true, text: decided.state === "allowed" ? "Allowed" : "Denied" };
  } catch (error) {
    if (error instanceof DomainError && REFUSALS[error.code]) return refusal(REFUSALS[error.code] ?? "");
    throw error;
  }
}

const refusal = (text: string): ChannelTapResult => ({ ok: false, text });

/** Unlinked, or linked once and removed from the team since (the link went with the membership). */
async function notLinkedSentence(env: Env, tap: ChannelTap): Promise<string> {
  const removed = await channelLinkRemoved(env.DB, tap.teamId, tap.channel, tap.externalUserId);
  return removed ? "You are no longer in this team" : "Link your Tapgate account first";
}
