/**
 * Appending to a team's audit log. The team's TeamHub is the chain's one writer (it hashes and
 * inserts in order), so every use case appends through here, with an event from
 * `audit-events.ts`.
 *
 * Owns: the path from a use case to the hub's `appendAudit`. Does not own: the chain's hashing
 * (the hub), the D1 statements (`db/audit.ts`, pure D1), nor what an event says (`audit-events.ts`).
 */

import type { AuditEvent } from "../audit-chain";
import { hubFor } from "../hub/api";
import type { Env } from "../types";

export async function appendAudit(env: Env, event: AuditEvent): Promise<void> {
  await hubFor(env, event.teamId).appendAudit([event]);
}
