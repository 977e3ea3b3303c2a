/**
 * The escalation ladder's mail step: each person it names gets a link to the card. The link
 * opens the app and decides nothing by itself; the mail carries no tool arguments.
 *
 * A step may run more than once (a mail the provider failed, a hub evicted mid-step): each person
 * mailed is written down (`escalation_mails`) and not mailed again, and each mail carries an
 * idempotency key per step and person, so the provider sends once a mail that went out before its
 * answer was lost. A mail that fails for now (`sendMail` throws) fails the step once the others
 * are tried, and the gate asks for it again; one the provider refuses for good reaches nobody.
 *
 * Owns: the mail's words, `escalation_mails`. Does not own: whom a step reaches (`escalation.ts`)
 * or sending (`worker/mail.ts`).
 */
import { privateRequestLine, privateSessionLabel } from "../../sdk/src/human/push";
import { listMembers } from "../db";
import { sendMail } from "../mail";
import type { EscalationOrder } from "./api";
import type { Directory } from "./directory";
import type { HubHost } from "./host";

export async function mailStep(
  host: HubHost,
  directory: Directory,
  order: EscalationOrder,
  people: string[],
  now: number,
) {
  const teamId = host.teamId();
  const members = teamId ? await listMembers(host.env.DB, teamId) : [];
  const link = `${host.appOrigin}/approvals/${encodeURIComponent(order.approval.id)}`;
  const mailed = mailedBefore(host, order);
  let reached = 0;
  let failure: unknown = null;
  for (const userId of people) {
    const member = members.find((m) => m.userId === userId);
    if (!member) continue;
    if (mailed.has(userId)) {
      reached++;
      continue;
    }
    try {
      const sent = await sendMail(host.env, {
        to: member.email,
        subject: "An agent is waiting for your answer on Tapgate",
        text: `${waitingLine(order)}\n\nOpen it in Tapgate: ${link}\n\nThe link opens the app; it decides nothing by itself.`,
        link,
        idempotencyKey: escalationMailKey(order.approval.id, order.step, order.phase, userId),
      });
      if (sent === "refused") continue;
      noteMailed(host, order, userId, now);
      reached++;
    } catch (error) {
      failure ??= error;
    }
  }
  if (failure) throw failure;
  return { reached, to: people.map((id) => directory.nameOf(id)), held: false, shownLive: [] as string[] };
}

/** The idempotency key of a step's mail to one person: the same on every run of the step. */
export function escalationMailKey(approvalId: string, step: number, phase: string, userId: string): string {
  return `escalation:${approvalId}:${step}:${phase}:${userId}`;
}

function mailedBefore(host: HubHost, { approval, step, phase }: EscalationOrder): Set<string> {
  const rows = host.sql
    .exec<{ user_id: string }>(
      "SELECT user_id FROM escalation_mails WHERE approval_id = ? AND step = ? AND phase = ?",
      approval.id,
      step,
      phase,
    )
    .toArray();
  return new Set(rows.map((r) => r.user_id));
}

function noteMailed(host: HubHost, { approval, step, phase }: EscalationOrder, userId: string, now: number): void {
  host.sql.exec(
    "INSERT OR IGNORE INTO escalation_mails (approval_id, step, phase, user_id, at) VALUES (?, ?, ?, ?, ?)",
    approval.id,
    step,
    phase,
    userId,
    now,
  );
}

/** Where the request waits; a private one by its session's title only (its content is sealed). */
function waitingLine({ approval }: EscalationOrder): string {
  if (approval.sealed) return `${privateRequestLine(privateSessionLabel(approval))}. It has not been seen yet.`;
  return `A request in agent session ${approval.sessionId} has not been seen yet.`;
}
