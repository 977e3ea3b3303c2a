/**
 * The escalation ladder's mail step: each person it names gets a link to the card. The link
 * opens the app and decides nothing by itself; the mail carries no tool arguments, and an
 * idempotency key per step and person, so a step re-run by an evicted hub sends none twice.
 *
 * Owns: the mail's words. Does not own: whom a step reaches (`escalation.ts`) or sending
 * (`worker/mail.ts`).
 */
import { privateRequestLine, privateSessionLabel } from "../../sdk/src/human/push";
import { listMembers } from "../db";
import { sendMail } from "../mail";
import type { EscalationOrder } from "./api";
import type { Directory } from "./directory";
import type { HubHost } from "./host";

export async function mailStep(host: HubHost, directory: Directory, order: EscalationOrder, people: string[]) {
  const teamId = host.teamId();
  const members = teamId ? await listMembers(host.env.DB, teamId) : [];
  const link = `${host.appOrigin}/approvals/${encodeURIComponent(order.approval.id)}`;
  let reached = 0;
  for (const userId of people) {
    const member = members.find((m) => m.userId === userId);
    if (!member) continue;
    await sendMail(host.env, {
      to: member.email,
      subject: "An agent is waiting for your answer on Tapgate",
      text: `${waitingLine(order)}\n\nOpen it in Tapgate: ${link}\n\nThe link opens the app; it decides nothing by itself.`,
      link,
      idempotencyKey: `escalation:${order.approval.id}:${order.step}:${order.phase}:${userId}`,
    });
    reached++;
  }
  return { reached, to: people.map((id) => directory.nameOf(id)), held: false, shownLive: [] as string[] };
}

/** Where the request waits; a private one by its session's title only (its content is sealed). */
function waitingLine({ approval }: EscalationOrder): string {
  if (approval.sealed) return `${privateRequestLine(privateSessionLabel(approval))}. It has not been seen yet.`;
  return `A request in agent session ${approval.sessionId} has not been seen yet.`;
}
