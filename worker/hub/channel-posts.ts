/**
 * The hub's outside-channel posts: a ladder step whose `via` is a channel (Slack, Telegram,
 * PagerDuty) asks the channel's adapter where to post for the step's people, queues one durable
 * row per place, and posts them (a few per turn; a retryable failure again with backoff from the
 * hub's alarm, until the request would have expired; any other failure ends the row). A posted
 * row counts as reached in the step's outcome, the receipts and the timeline. When the request
 * ends, each posted row is updated ("Allowed by Ada on Slack", "Expired"), retried the same way.
 *
 * Owns: the `channel_posts` table, the card a channel is given (`lockScreenTitle`'s text, never
 * arguments), the ending's words, and each post's share of the push budget. Does not own: when a
 * step runs or whether the ladder climbs (`escalation.ts`), any platform's API (`worker/channels/`).
 */

import type { Approval } from "../../sdk/src/approval";
import { CHANNEL_NAMES, type Channel, channelSchema } from "../../sdk/src/human/channels";
import { channelAllowRefusal } from "../channels/card-allow";
import { type ChannelCard, type ChannelEnding, ChannelFailure, type ChannelTarget } from "../channels/channel";
import { channelAdapter } from "../channels/registry";
import { retryDelayMs } from "../gate/rules";
import type { EscalationOrder, StepOutcome } from "./api";
import type { Directory } from "./directory";
import type { HubHost } from "./host";
import type { PushBudget } from "./push-budget";
import { lockScreenTitle } from "./web-push";

/** The most posts and updates one drain sends (each a subrequest): the rest wait for the alarm. */
const DRAIN_PER_TURN = 6;
/** A row being sent is not taken by another drain for this long (a crash mid-send retries after it). */
const SEND_CLAIM_MS = 30_000;
/** An update of a post that ended is tried this many times, then given up. */
const MAX_END_ATTEMPTS = 8;

type PostState = "post" | "posted" | "end" | "ended" | "failed";

export class ChannelPosts {
  constructor(
    private readonly host: HubHost,
    private readonly directory: Directory,
    private readonly budget: PushBudget,
    /** A post went out after its step (a retry from the alarm): the card and the receipts change. */
    private readonly onPosted: (approvalId: string) => void,
  ) {}

  /** Runs a channel step: queues a post per place the adapter names, posts what it can now; the outcome. */
  async step(order: EscalationOrder, people: string[], now: number): Promise<StepOutcome & { shownLive: string[] }> {
    const channel = channelSchema.parse(order.via);
    const teamId = this.host.teamId();
    const adapter = channelAdapter(channel);
    const nobody = { reached: 0, to: [CHANNEL_NAMES[channel]], held: false, shownLive: [] as string[] };
    if (!teamId || !adapter?.configured(this.host.env)) return nobody;
    const targets = await adapter.targets(this.host.env, teamId, people).catch(() => [] as ChannelTarget[]);
    const card = cardOf(teamId, order, this.host.appOrigin);
    // Ended while the places were looked up: `ended` found no row to update, so post none.
    if (!this.isPending(card.approvalId)) return nobody;
    for (const target of targets) {
      // As a push would: past the recipient's budget, this place is not posted to for this request.
      const spend = this.budget.spend(`${channel}:${target.address}`, card.approvalId, now);
      if (spend && spend.kind !== "approval") continue;
      this.host.sql.exec(
        `INSERT INTO channel_posts (approval_id, channel, address, user_id, card, state, attempts, next_at)
           VALUES (?, ?, ?, ?, ?, 'post', 0, ?) ON CONFLICT DO NOTHING`,
        card.approvalId,
        channel,
        target.address,
        target.userId ?? null,
        JSON.stringify(card),
        now,
      );
    }
    await this.drain(Math.max(now, Date.now()));
    const to = targets.map((t) => (t.userId ? this.directory.nameOf(t.userId) : CHANNEL_NAMES[channel]));
    return { ...nobody, reached: this.reached(card.approvalId, channel), to: to.length > 0 ? to : nobody.to };
  }

  private isPending(approvalId: string): boolean {
    return (
      this.host.sql.exec("SELECT 1 FROM approvals WHERE id = ? AND state = 'pending'", approvalId).toArray().length > 0
    );
  }

  /** How many of the request's posts on `channel` went out (an evicted step's outcome counts them too). */
  reached(approvalId: string, channel: string): number {
    return this.host.sql
      .exec(
        "SELECT COUNT(*) AS n FROM channel_posts WHERE approval_id = ? AND channel = ? AND posted_at IS NOT NULL",
        approvalId,
        channel,
      )
      .one().n as number;
  }

  /** The request's posts that went out, as receipts (`device`: the channel's name). */
  delivered(approvalId: string): Array<{ userId: string; name: string; device: string; at: number }> {
    return this.host.sql
      .exec(
        "SELECT channel, user_id, posted_at FROM channel_posts WHERE approval_id = ? AND posted_at IS NOT NULL ORDER BY posted_at",
        approvalId,
      )
      .toArray()
      .map((r) => {
        const channelName = CHANNEL_NAMES[r.channel as Channel];
        const userId = (r.user_id as string | null) ?? "";
        return {
          userId,
          name: userId ? this.directory.nameOf(userId) : channelName,
          device: channelName,
          at: r.posted_at as number,
        };
      });
  }

  /**
   * The request ended: every post that went out is updated with how, and one still waiting to go
   * out never goes (nothing to ask any more). Durable: retried from the alarm.
   */
  async ended(approval: Approval, now: number): Promise<void> {
    const ending = JSON.stringify(endingOf(approval));
    const { sql } = this.host;
    sql.exec(
      "UPDATE channel_posts SET state = 'end', ending = ?, attempts = 0, next_at = ? WHERE approval_id = ? AND state = 'posted'",
      ending,
      now,
      approval.id,
    );
    sql.exec(
      "UPDATE channel_posts SET state = 'ended', ending = ?, next_at = NULL WHERE approval_id = ? AND state = 'post'",
      ending,
      approval.id,
    );
    await this.drain(now);
  }

  /** Sends the posts and updates due at `now`, a few per turn; the alarm comes back for the rest. */
  async drain(now = Date.now()): Promise<void> {
    const { sql } = this.host;
    // Claimed before the first await, so a drain alongside (the alarm, another step) sends none twice.
    const due = sql
      .exec(
        `UPDATE channel_posts SET next_at = ?1 WHERE rowid IN
           (SELECT rowid FROM channel_posts WHERE next_at <= ?2 ORDER BY next_at LIMIT ?3) RETURNING *`,
        now + SEND_CLAIM_MS,
        now,
        DRAIN_PER_TURN,
      )
      .toArray();
    // An instance evicted mid-send still comes back for what it claimed.
    if (due.length > 0) await this.host.setAlarm(now + SEND_CLAIM_MS);
    await Promise.all(due.map((row) => this.send(row, now)));
    const next = sql.exec("SELECT MIN(next_at) AS at FROM channel_posts").one().at as number | null;
    if (next !== null) await this.host.setAlarm(next);
  }

  private async send(row: Record<string, SqlStorageValue>, now: number): Promise<void> {
    const key = [row.approval_id, row.channel, row.address] as SqlStorageValue[];
    const adapter = channelAdapter(row.channel as Channel);
    const card = JSON.parse(row.card as string) as ChannelCard;
    const target: ChannelTarget = {
      address: row.address as string,
      ...(row.user_id ? { userId: row.user_id as string } : {}),
    };
    const attempts = (row.attempts as number) + 1;
    const set = (state: PostState, fields: string, ...values: SqlStorageValue[]) =>
      this.host.sql.exec(
        `UPDATE channel_posts SET state = ?, attempts = ?, ${fields} WHERE approval_id = ? AND channel = ? AND address = ?`,
        state,
        attempts,
        ...values,
        ...key,
      );
    try {
      if (!adapter) throw new ChannelFailure(false, "no adapter");
      if (row.state === "post") {
        const { ref } = await adapter.post(this.host.env, target, card);
        // Ended while this post was on its way: it is updated at once.
        const ending = this.endingNow(key);
        if (ending) set("end", "ref = ?, posted_at = ?, ending = ?, next_at = ?", ref, Date.now(), ending, Date.now());
        else set("posted", "ref = ?, posted_at = ?, next_at = NULL", ref, Date.now());
        if (!ending) this.onPosted(card.approvalId);
        return;
      }
      const ending = JSON.parse(row.ending as string) as ChannelEnding;
      await adapter.end(this.host.env, target, row.ref as string, card, ending);
      set("ended", "next_at = NULL");
    } catch (error) {
      const retryable = error instanceof ChannelFailure ? error.retryable : true;
      const retryAt = now + retryDelayMs(attempts - 1);
      const inTime = row.state === "post" ? retryAt < card.expiresAt : attempts < MAX_END_ATTEMPTS;
      // A post that failed after its request ended is not tried again: there is nothing to ask.
      const endedMeanwhile = row.state === "post" && this.endingNow(key) !== null;
      if (endedMeanwhile) set("ended", "next_at = NULL");
      else if (retryable && inTime) set(row.state as PostState, "next_at = ?", retryAt);
      else set(row.state === "post" ? "failed" : "ended", "next_at = NULL");
    }
  }

  private endingNow(key: readonly SqlStorageValue[]): string | null {
    const row = this.host.sql
      .exec("SELECT ending FROM channel_posts WHERE approval_id = ? AND channel = ? AND address = ?", ...key)
      .toArray()[0];
    return (row?.ending as string | null | undefined) ?? null;
  }

  /** Forgets the posts of requests the feed forgets (resolved before `before`) once nothing is due. */
  prune(before: number): void {
    this.host.sql.exec(
      `DELETE FROM channel_posts WHERE next_at IS NULL AND approval_id IN
         (SELECT id FROM approvals WHERE state <> 'pending' AND updated_at < ?)`,
      before,
    );
  }
}

/** What a channel shows of a request: the lock-screen text under the team's policy, never arguments. */
function cardOf(teamId: string, order: EscalationOrder, appOrigin: string): ChannelCard {
  const { approval } = order;
  return {
    teamId,
    approvalId: approval.id,
    requestHash: approval.requestHash,
    sessionId: approval.sessionId,
    text: lockScreenTitle(approval, order.lockScreen),
    highRisk: approval.risk === "high",
    noAllow: channelAllowRefusal(approval, order.lockScreen),
    link: `${appOrigin}/approvals/${encodeURIComponent(approval.id)}`,
    expiresAt: approval.expiresAt,
  };
}

/** How the request ended, in one line: "Allowed by Ada on Slack", "Denied by Ada", "Expired". */
export function endingOf(approval: Approval): ChannelEnding {
  const by = approval.decidedBy;
  const where = by?.via && by.via !== "app" ? ` on ${CHANNEL_NAMES[by.via]}` : "";
  if (approval.reason === "expired") return { state: "expired", text: "Expired" };
  if (approval.reason === "agent_cancelled" || approval.reason === "session_cancelled")
    return { state: "cancelled", text: "Cancelled by the agent" };
  if (approval.reason === "dismissed")
    return { state: "cancelled", text: `Dismissed by ${by?.name ?? "someone"}${where}` };
  const state = approval.state === "allowed" ? "allowed" : "denied";
  const verb = state === "allowed" ? "Allowed" : "Denied";
  if (by) return { state, text: `${verb} by ${by.name}${where}` };
  if (approval.rule) return { state, text: `${verb} by a standing rule` };
  return { state, text: (approval.reason && ENDED_WITHOUT_A_HUMAN[approval.reason]) || verb };
}

/** A request denied by no one: why it ended, not "Denied" (nobody said no). */
const ENDED_WITHOUT_A_HUMAN: Partial<Record<string, string>> = {
  agent_disconnected: "Ended: the agent disconnected",
  key_revoked: "Ended: the agent's key was revoked",
  session_stopped: "Ended: the session was stopped",
  service_restart: "Ended: Tapgate restarted",
};
