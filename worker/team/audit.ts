/**
 * Appending to a team's audit log, durably. The team's TeamHub is the chain's one writer (it
 * hashes and inserts in order), but a use case never hands it an event and hopes: the event is
 * first queued in D1 (`audit_outbox`), in the same batch as the action's own write where the use
 * case can (the `db/` write takes the event), else before the route answers (`appendAudit`). The hub then drains the
 * queue; if it cannot now, the event waits for its next append (at most every 10 s), verify or alarm.
 *
 * Owns: the path from a use case to the chain. Does not own: the chain's hashing (the hub), the
 * D1 statements (`db/audit.ts`, pure D1), nor what an event says (`audit-events.ts`).
 */

import type { AuditEvent } from "../audit-chain";
import { auditOutboxStatement } from "../db";
import { REQUEST_BUDGET_MS, withDeadline } from "../deadline";
import { hubFor } from "../hub/api";
import type { Env } from "../types";

/**
 * Queues `event` on its own (a replay is ignored), then asks the hub to chain it. For actions
 * whose write cannot carry the event: prefer passing the event to the write (`db/` functions
 * that take `audit`), then `chainQueued`.
 */
export async function appendAudit(env: Env, event: AuditEvent): Promise<void> {
  await auditOutboxStatement(env.DB, event).run();
  await chainQueued(env, event.teamId);
}

/**
 * Asks the team's hub to chain what is queued. Never fails the caller: the events are durable
 * in D1 already, and the hub drains them on its next append (at most every 10 s), verify or alarm.
 */
export async function chainQueued(env: Env, teamId: string): Promise<void> {
  try {
    await withDeadline(hubFor(env, teamId).drainAudit(teamId), REQUEST_BUDGET_MS, "hub.drainAudit");
  } catch (error) {
    console.error(`audit: queued, the hub chains it later: ${String(error).slice(0, 200)}`);
  }
}
