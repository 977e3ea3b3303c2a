/**
 * The hub's webhook deliveries: the team's queue in D1 (`webhook_messages`), sent from the hub's
 * alarm, at least once and in order per endpoint: each endpoint's oldest pending message is the
 * only one in flight, and a later one waits behind it while it is retried with backoff, for up
 * to 24 h after its event (then `failed`, and the next one goes). Each try is signed per the
 * Standard Webhooks spec (`standardwebhooks`), bounded by a timeout, with `redirect: "manual"`
 * (a 3xx is a failure), and only after the URL passed its rule again (`url.ts`).
 *
 * How an event is never lost: its message is written by the chain's writer in the same D1 batch
 * as its audit entry (`queueStatement`); then the writer tells us (`queued`), which marks the
 * hub's SQLite (`meta('webhooks_due')`) and sets the alarm. A hub gone between the batch and the
 * mark leaves the message in D1, where the hourly sweep finds it (`index.ts` `scheduled`).
 *
 * Owns: when to send, one send and what its answer means, the backoff, `meta('webhooks_due')`.
 * Does not own: the SQL (`db/webhooks.ts`), the URL rule, the secret's seal (`secret-box.ts`),
 * or the event map (`events.ts`).
 */
import { Webhook } from "standardwebhooks";
import { WEBHOOK_RETRY_WINDOW_MS } from "../../sdk/src/human/webhooks";
import type { AuditEntry } from "../audit-chain";
import { dueWebhookHeads, nextWebhookAt, recordWebhookAttempt, type WebhookHead, webhookQueueStatement } from "../db";
import type { HubHost } from "../hub/host";
import { EVENT_OF_ACTION } from "./events";
import { openSecret } from "./secret-box";
import { webhookUrlProblem } from "./url";

/** How long one try may take before it counts as failed (`timeout`). */
export const WEBHOOK_TIMEOUT_MS = 10_000;
/** The wait after the 1st, 2nd, … failed try; the last repeats until the retry window closes. */
export const WEBHOOK_BACKOFF_MS = [5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000, 7_200_000];
/** The most sends one alarm makes (each a subrequest); the rest go in the next alarm, set at once. */
const SENDS_PER_ALARM = 40;
/** Endpoints sent to at once (one message each). */
const HEADS_PER_ROUND = 10;

/** What the next try after `attempts` failed tries is: again at a time, or given up. */
export function afterFailure(
  attempts: number,
  createdAt: number,
  now: number,
): { state: "pending" | "failed"; nextAt: number } {
  const wait = WEBHOOK_BACKOFF_MS[Math.min(attempts, WEBHOOK_BACKOFF_MS.length) - 1] ?? 0;
  const nextAt = now + wait;
  return nextAt > createdAt + WEBHOOK_RETRY_WINDOW_MS ? { state: "failed", nextAt: now } : { state: "pending", nextAt };
}

export class WebhookDeliveries {
  /** Marks made so far: a mark made while the alarm runs keeps the next alarm coming. */
  private marks = 0;
  private running: Promise<unknown> = Promise.resolve();

  constructor(private readonly host: HubHost) {}

  /** The statement the chain's writer adds to its batch after `entries` (see `db/webhooks.ts`). */
  queueStatement(teamId: string, entries: AuditEntry[], now = Date.now()): D1PreparedStatement {
    const written = entries.map((e) => ({ eventId: e.eventId, hash: e.hash }));
    return webhookQueueStatement(this.host.env.DB, teamId, written, EVENT_OF_ACTION, now);
  }

  /** The writer's batch queued `count` messages: send them from the alarm, now. */
  async queued(count: number, now = Date.now()): Promise<void> {
    if (count > 0) await this.due(now);
  }

  /** Marks that messages are due at `at` and wakes the alarm for them. */
  async due(at: number): Promise<void> {
    this.marks++;
    const marked = this.dueAt();
    if (marked === null || marked > at)
      this.host.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('webhooks_due', ?)", String(at));
    await this.host.setAlarm(at);
  }

  private dueAt(): number | null {
    const v = this.host.sql.exec("SELECT v FROM meta WHERE k = 'webhooks_due'").toArray()[0]?.v;
    return typeof v === "string" ? Number(v) : null;
  }

  /**
   * The alarm's part: sends what is due (only when something is marked due, so no D1 read
   * otherwise). Runs one at a time, so two never pick the same message.
   */
  alarm(now = Date.now()): Promise<void> {
    const run = this.running.then(() => this.sendDue(now));
    this.running = run.catch(() => undefined);
    return run;
  }

  private async sendDue(now: number): Promise<void> {
    const teamId = this.host.teamId();
    const marked = this.dueAt();
    if (!teamId || marked === null || marked > now) return;
    const marksBefore = this.marks;
    let sent = 0;
    while (sent < SENDS_PER_ALARM) {
      const heads = await dueWebhookHeads(this.host.env.DB, teamId, now, HEADS_PER_ROUND);
      if (heads.length === 0) break;
      await Promise.all(heads.map((head) => this.deliver(teamId, head, now)));
      sent += heads.length;
    }
    const next = await nextWebhookAt(this.host.env.DB, teamId);
    this.host.sql.exec("DELETE FROM meta WHERE k = 'webhooks_due'");
    // Messages queued while this ran may not have been read above: look again at once.
    if (this.marks !== marksBefore) await this.due(now);
    else if (next !== null) await this.due(Math.max(next, now));
  }

  /** One try of one message, recorded. */
  private async deliver(teamId: string, head: WebhookHead, now: number): Promise<void> {
    const { status, error } = await this.send(teamId, head);
    const attempts = head.attempts + 1;
    const after =
      error === null
        ? { state: "delivered" as const, nextAt: now }
        : error.startsWith("url_not_allowed")
          ? { state: "failed" as const, nextAt: now }
          : afterFailure(attempts, head.createdAt, now);
    await recordWebhookAttempt(this.host.env.DB, {
      n: head.n,
      endpointId: head.endpointId,
      status,
      error,
      at: now,
      ...after,
    });
  }

  private async send(teamId: string, head: WebhookHead): Promise<{ status: number | null; error: string | null }> {
    const problem = webhookUrlProblem(head.url, this.host.env.DEV_OUTBOX === "1");
    if (problem) return { status: null, error: `url_not_allowed: ${problem}` };
    const secret = await openSecret(this.host.env, teamId, head.endpointId, head.sealedSecret);
    if (!secret) return { status: null, error: "secret_unreadable: rotate the endpoint's secret" };
    // The signature's time is the real clock's: receivers check it against theirs.
    const sentAt = new Date(Math.floor(Date.now() / 1000) * 1000);
    try {
      const response = await fetch(head.url, {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          "User-Agent": "Tapgate-Webhooks/1",
          "webhook-id": head.id,
          "webhook-timestamp": String(sentAt.getTime() / 1000),
          "webhook-signature": new Webhook(secret).sign(head.id, sentAt, head.payload),
        },
        body: head.payload,
        redirect: "manual",
        signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
      });
      await response.body?.cancel();
      if (response.status >= 200 && response.status < 300) return { status: response.status, error: null };
      const redirect = response.status >= 300 && response.status < 400;
      return {
        status: response.status,
        error: redirect ? `redirect ${response.status} (not followed)` : `status ${response.status}`,
      };
    } catch (error) {
      const timedOut = error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError");
      return { status: null, error: timedOut ? `timeout after ${WEBHOOK_TIMEOUT_MS / 1000} s` : "network error" };
    }
  }
}
