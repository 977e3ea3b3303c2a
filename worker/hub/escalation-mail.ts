/**
 * The escalation ladder's mail step: each person it names gets a link to the card. The link
 * opens the app and decides nothing by itself; the mail carries no tool arguments.
 *
 * A step may run more than once (a mail the provider failed, a hub evicted mid-step): each mail
 * sent, or refused for good by the provider, is written down (`escalation_mails`) and not sent
 * again, and each carries an idempotency key per step and person, so the provider sends once a
 * mail that went out before its answer was lost. A mail that fails for now (`sendMail` throws)
 * fails the step once the others are tried, and the gate asks for it again ACK_RETRY_MS later;
 * after MAIL_STEP_RUNS runs the step is done with whom it reached, so a provider that stays down
 * holds the ladder's later steps (the pushes to every approver) no longer than that.
 *
 * Owns: the mail's words, `escalation_mails` and `escalation_mail_runs`. Does not own: whom a
 * step reaches (`escalation.ts`) or sending (`worker/mail.ts`).
 */
import { privateRequestLine, privateSessionLabel } from "../../sdk/src/human/push";
import { listMembers } from "../db";
import { type MailSent, sendMail } from "../mail";
import type { EscalationOrder } from "./api";
import type { Directory } from "./directory";
import type { HubHost } from "./host";

/** How many runs a mail step gets before it is done with whom it reached. */
export const MAIL_STEP_RUNS = 3;

export async function mailStep(
  host: HubHost,
  directory: Directory,
  order: EscalationOrder,
  people: string[],
  now: number,
) {
  const runs = countRun(host, order);
  const teamId = host.teamId();
  const members = teamId ? await listMembers(host.env.DB, teamId) : [];
  const link = `${host.appOrigin}/approvals/${encodeURIComponent(order.approval.id)}`;
  const before = mailedBefore(host, order);
  let reached = 0;
  let failure: unknown = null;
  for (const userId of people) {
    const member = members.find((m) => m.userId === userId);
    if (!member) continue;
    let outcome = before.get(userId);
    if (outcome === undefined) {
      try {
        outcome = await sendMail(host.env, {
          to: member.email,
          subject: "An agent is waiting for your answer on Tapgate",
          text: [
            waitingLine(order),
            `Open it in Tapgate: ${link}`,
            "The link opens the app; it decides nothing by itself.",
          ].join("\n\n"),
          link,
          idempotencyKey: escalationMailKey(order.approval.id, order.step, order.phase, userId),
        });
        noteMail(host, order, userId, outcome, now);
      } catch (error) {
        failure ??= error;
      }
    }
    if (outcome === "sent") reached++;
  }
  if (failure && runs < MAIL_STEP_RUNS) throw failure;
  if (failure)
    console.error(`escalation mail: a step ran ${runs} times and some mails failed; it is done with ${reached}`);
  return { reached, to: people.map((id) => directory.nameOf(id)), held: false, shownLive: [] as string[] };
}

/** The idempotency key of a step's mail to one person: the same on every run of the step. */
export function escalationMailKey(approvalId: string, step: number, phase: string, userId: string): string {
  return `escalation:${approvalId}:${step}:${phase}:${userId}`;
}

/** This run of the step, counted: 1 for its first. */
function countRun(host: HubHost, { approval, step, phase }: EscalationOrder): number {
  const row = host.sql
    .exec<{ runs: number }>(
      `INSERT INTO escalation_mail_runs (approval_id, step, phase, runs) VALUES (?, ?, ?, 1)
         ON CONFLICT (approval_id, step, phase) DO UPDATE SET runs = runs + 1 RETURNING runs`,
      approval.id,
      step,
      phase,
    )
    .one();
  return row.runs;
}

function mailedBefore(host: HubHost, { approval, step, phase }: EscalationOrder): Map<string, MailSent> {
  const rows = host.sql
    .exec<{ user_id: string; outcome: MailSent }>(
      "SELECT user_id, outcome FROM escalation_mails WHERE approval_id = ? AND step = ? AND phase = ?",
      approval.id,
      step,
      phase,
    )
    .toArray();
  return new Map(rows.map((r) => [r.user_id, r.outcome]));
}

function noteMail(
  host: HubHost,
  { approval, step, phase }: EscalationOrder,
  userId: string,
  outcome: MailSent,
  now: number,
): void {
  host.sql.exec(
    "INSERT OR IGNORE INTO escalation_mails (approval_id, step, phase, user_id, at, outcome) VALUES (?, ?, ?, ?, ?, ?)",
    approval.id,
    step,
    phase,
    userId,
    now,
    outcome,
  );
}

/** Where the request waits; a private one by its session's title only (its content is sealed). */
function waitingLine({ approval }: EscalationOrder): string {
  if (approval.sealed) return `${privateRequestLine(privateSessionLabel(approval))}. It has not been seen yet.`;
  return `A request in agent session ${approval.sessionId} has not been seen yet.`;
}
