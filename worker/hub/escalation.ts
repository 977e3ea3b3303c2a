/**
 * The hub's half of the escalation ladder: running one step a SessionGate asks for (push the
 * people it names, mail them a link to the card, or post it to a channel), presence (a person
 * whose visible page is open gets the card there and no push), and each request's timeline of
 * steps.
 *
 * Owns: the `escalations` table (each step and phase run once, with its outcome: the timeline),
 * `escalation_starts` (a push or channel step marked started before its pushes and posts leave,
 * so a hub evicted mid-step sends none of them twice) and `live_cards` (cards shown on, and seen
 * from, visible pages). Does not own: the receipts and their reports to the gate
 * (`receipt-reports.ts`), when a step runs (the gate's `escalation.ts`, by its alarm), pushes and
 * their budget (`push-queue.ts`, `push-budget.ts`), the mail (`escalation-mail.ts`), channel
 * posts (`channel-posts.ts`), who is visible (`live-feed.ts`), or who is in the team
 * (`directory.ts`).
 */
import type { EscalationEvent } from "../../sdk/src/approval";
import { seenAtOf } from "../gate/escalation-rules";
import type { ApprovalNews, EscalationOrder, EscalationOutcome, StepOutcome } from "./api";
import type { ChannelPosts } from "./channel-posts";
import { DIRECTORY_MAX_AGE_MS, type Directory } from "./directory";
import { mailStep } from "./escalation-mail";
import type { HubHost } from "./host";
import type { LiveFeed } from "./live-feed";
import type { PushQueue } from "./push-queue";
import type { ReceiptReports } from "./receipt-reports";

const NOBODY: StepOutcome = { reached: 0, to: [], held: false };

/** A step's outcome, and whether this call ran it (not a replay of its stored outcome). */
interface RanStep {
  outcome: StepOutcome;
  fresh: boolean;
}

export class Escalations {
  /** Steps running now, by `approvalId:step:phase`. */
  private readonly running = new Map<string, Promise<RanStep | null>>();

  constructor(
    private readonly host: HubHost,
    private readonly directory: Directory,
    private readonly feed: LiveFeed,
    private readonly push: PushQueue,
    private readonly channels: ChannelPosts,
    private readonly reports: ReceiptReports,
  ) {}

  /**
   * Runs the ordered step and then each step of its climb while the one before reached nobody
   * and held nothing (a person with no device costs the gate one call, not one per step). Each
   * step runs once, so a repeated order replays the same outcomes. The card and the gate's
   * receipts are told once, after the last step that ran, not once per step.
   */
  async run(order: EscalationOrder, now: number): Promise<EscalationOutcome> {
    const started = Date.now();
    let fresh = false;
    try {
      const ran = await this.runStep(order, now);
      fresh = ran?.fresh ?? false;
      const first = ran?.outcome ?? NOBODY;
      const climbed: NonNullable<EscalationOutcome["climbed"]> = [];
      let last = first;
      for (const next of order.climb ?? []) {
        // As the gate would: no further step once one reached someone or a decider saw it.
        if (last.reached > 0 || last.held || this.seen(order)) break;
        const step = await this.runStep({ ...order, ...next, phase: "step" }, now + Date.now() - started);
        if (!step) break; // resolved meanwhile: the rest of the climb never runs
        fresh ||= step.fresh;
        last = step.outcome;
        climbed.push({ step: next.step, outcome: last });
      }
      return climbed.length > 0 ? { ...first, climbed } : first;
    } finally {
      // Also when a later step failed: the steps that ran are on the card all the same.
      if (fresh) {
        this.feed.broadcast("approval", order.approval.id);
        this.reports.report(order.approval.id);
      }
    }
  }

  /** Whether someone whose seeing counts (the gate's rule, `seenAtOf`) saw the request. */
  private seen(order: EscalationOrder): boolean {
    return seenAtOf(this.reports.receipts(order.approval.id), order, order.ownerUserId) !== null;
  }

  /**
   * Runs one step once; a repeat of the same step and phase answers the first run's outcome,
   * and one asked again while it runs (a gate's retry) waits for it (`fresh` only for the first
   * run). Null when the request is resolved here: nothing ran.
   */
  private runStep(order: EscalationOrder, now: number): Promise<RanStep | null> {
    const key = `${order.approval.id}:${order.step}:${order.phase}`;
    const running = this.running.get(key);
    if (running) return running.then((ran) => ran && { ...ran, fresh: false });
    const run = this.runStepOnce(order, now).finally(() => this.running.delete(key));
    this.running.set(key, run);
    return run;
  }

  private async runStepOnce(order: EscalationOrder, now: number): Promise<RanStep | null> {
    const { sql } = this.host;
    const { approval } = order;
    const done = sql
      .exec(
        "SELECT outcome FROM escalations WHERE approval_id = ? AND step = ? AND phase = ?",
        approval.id,
        order.step,
        order.phase,
      )
      .toArray()[0];
    if (done) {
      const { reached, to, held } = JSON.parse(done.outcome as string) as StepOutcome;
      return { outcome: { reached, to, held }, fresh: false };
    }
    // News can overtake each other: a request already resolved here reaches nobody any more.
    if (!this.feed.remember(approval, order.ownerUserId, now)) return null;
    await this.directory.refresh(DIRECTORY_MAX_AGE_MS);
    const people = this.directory.peopleFor(order.to, order.ownerUserId);
    // A mail step may run again (it mails only those it has not: escalation-mail.ts); the others
    // run once, marked started before anything leaves.
    const outcome =
      order.via === "email"
        ? await mailStep(this.host, this.directory, order, people, now)
        : !this.markStarted(order, now)
          ? this.startedBefore(order, people)
          : order.via === "push"
            ? await this.pushTo(order, people, now)
            : await this.channels.step(order, people, now);
    const stored = { ...outcome, shownLive: outcome.shownLive.map((id) => this.directory.nameOf(id)) };
    sql.exec(
      "INSERT OR IGNORE INTO escalations (approval_id, step, phase, at, via, outcome) VALUES (?, ?, ?, ?, ?, ?)",
      approval.id,
      order.step,
      order.phase,
      now,
      order.via,
      JSON.stringify(stored),
    );
    return { outcome: { reached: outcome.reached, to: outcome.to, held: outcome.held }, fresh: true };
  }

  /**
   * Marks the step started before any mail or push leaves (the write commits before they go out:
   * the output gate); false when it was already, by an instance evicted before it stored the
   * outcome.
   */
  private markStarted(order: EscalationOrder, now: number): boolean {
    const marked = this.host.sql
      .exec(
        "INSERT OR IGNORE INTO escalation_starts (approval_id, step, phase, at) VALUES (?, ?, ?, ?) RETURNING at",
        order.approval.id,
        order.step,
        order.phase,
        now,
      )
      .toArray();
    return marked.length > 0;
  }

  /**
   * A push or channel step an evicted instance started: its pushes went or wait in the durable
   * push queue, its posts in the channel queue, so none is sent again; they count as they stand.
   */
  private startedBefore(order: EscalationOrder, people: string[]) {
    const devices = people.flatMap((userId) => this.directory.devicesOf(userId).map((d) => d.id));
    const { via } = order;
    const reached =
      via === "push"
        ? this.push.reachedOrTrying(order.approval.id, devices).length
        : this.channels.reached(order.approval.id, via);
    return { reached, to: people.map((id) => this.directory.nameOf(id)), held: false, shownLive: [] as string[] };
  }

  /**
   * Pushes each person's devices: a first push where the request never went, a repeat where it
   * did. A person with a visible page gets the card there instead (phase "step"); the presence
   * phase pushes those shown it live who have not seen it.
   */
  private async pushTo(order: EscalationOrder, people: string[], now: number) {
    const { approval } = order;
    const news: ApprovalNews = {
      approval,
      ownerUserId: order.ownerUserId,
      recipients: "session_owner",
      lockScreen: order.lockScreen,
    };
    const shownLive: string[] = [];
    const pushed: string[] = [];
    const targets = order.phase === "presence" ? people.filter((p) => this.shownNotSeen(approval.id, p)) : people;
    for (const userId of targets) {
      if (order.phase === "step" && this.feed.isVisible(userId)) {
        this.showLive(approval.id, userId, now);
        shownLive.push(userId);
        continue;
      }
      const devices = this.directory.devicesOf(userId);
      const before = new Set(this.push.deliveries(approval.id).flatMap((d) => (d.sentAt === null ? [] : [d.deviceId])));
      const first = this.push.queueNews(
        news,
        devices.filter((d) => !before.has(d.id)),
        now,
      );
      const again = this.push.queueRepeat(
        news,
        devices.filter((d) => before.has(d.id)),
        now,
      );
      pushed.push(...first, ...again);
    }
    await this.push.drain(Math.max(now, Date.now()));
    const reached = this.push.reachedOrTrying(approval.id, pushed).length + shownLive.length;
    return { reached, to: targets.map((id) => this.directory.nameOf(id)), held: shownLive.length > 0, shownLive };
  }

  /** A visible page of this person showed these cards: seen, for the ones still pending. */
  seenLive(userId: string, approvalIds: string[], now: number): void {
    this.feed.storeAdmitted();
    for (const id of approvalIds) {
      const changed = this.host.sql
        .exec(
          `INSERT INTO live_cards (approval_id, user_id, shown_at, seen_at)
           SELECT ?1, ?2, ?3, ?3 WHERE EXISTS (SELECT 1 FROM approvals WHERE id = ?1 AND state = 'pending')
           ON CONFLICT DO UPDATE SET seen_at = ?3, shown_at = COALESCE(shown_at, ?3) WHERE seen_at IS NULL
           RETURNING approval_id`,
          id,
          userId,
          now,
        )
        .toArray();
      if (changed.length === 0) continue;
      this.feed.broadcast("approval", id);
      this.reports.report(id);
    }
  }

  private showLive(approvalId: string, userId: string, now: number): void {
    this.host.sql.exec(
      "INSERT INTO live_cards (approval_id, user_id, shown_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
      approvalId,
      userId,
      now,
    );
  }

  private shownNotSeen(approvalId: string, userId: string): boolean {
    return (
      this.host.sql
        .exec("SELECT 1 FROM live_cards WHERE approval_id = ? AND user_id = ? AND seen_at IS NULL", approvalId, userId)
        .toArray().length > 0
    );
  }

  timeline(approvalId: string): EscalationEvent[] {
    return this.host.sql
      .exec("SELECT step, phase, at, via, outcome FROM escalations WHERE approval_id = ? ORDER BY at, step", approvalId)
      .toArray()
      .map((r) => {
        const o = JSON.parse(r.outcome as string) as { reached: number; to: string[]; shownLive: string[] };
        const via = r.via as EscalationEvent["via"];
        // A channel's post retried from the alarm reaches after its step: counted as it stands.
        if (via !== "push" && via !== "email") o.reached = this.channels.reached(approvalId, via);
        return {
          step: r.step as number,
          phase: r.phase as EscalationEvent["phase"],
          at: r.at as number,
          via,
          to: o.to,
          reached: o.reached,
          shownLive: o.shownLive,
        };
      });
  }

  /** Forgets the steps and cards of requests the feed forgets (resolved before `before`). */
  prune(before: number): void {
    this.channels.prune(before);
    for (const table of [
      "escalations",
      "escalation_starts",
      "escalation_mails",
      "escalation_mail_runs",
      "live_cards",
    ]) {
      this.host.sql.exec(
        `DELETE FROM ${table} WHERE approval_id IN (SELECT id FROM approvals WHERE state <> 'pending' AND updated_at < ?)`,
        before,
      );
    }
  }
}
