/**
 * Before a human's allow is claimed: whether the request's agent key was revoked where this gate
 * was not told yet (the revocation's fan-out failed here and is retried from the hub's alarm).
 * The team's hub refuses such a key at admission until every gate has it; asked here as well, an
 * allow of a request the key had held already is refused the same way: the shell ends the key's
 * requests `key_revoked` before the decision is taken, which then finds the request ended (`410
 * already_resolved`). The hub's memory alone is asked (one lookup, no D1): a key it never heard
 * of is the read back's (`hub/revocations.ts`). A single decision's route has already asked it,
 * with the decider's role (`vouchDecider`), and hands its word on the key in (`keyStanding`):
 * for that key the gate asks nothing more.
 *
 * Owns: which decisions are checked (those that could allow) and the check's fallback (D1's
 * record of the key, when the hub does not answer within REQUEST_BUDGET_MS). Does not own:
 * ending the key's requests (the shell's `revokeKey`) or the decision (state-machine.ts).
 */
import { isAllowKind, type PermissionOption } from "../../sdk/src/protocol";
import { keyLive } from "../db";
import { REQUEST_BUDGET_MS, withDeadline } from "../deadline";
import type { DecisionInput } from "./api";
import type { GateHub } from "./hub";

export interface KeyCheckHost {
  hub(teamId: string): GateHub;
  db: D1Database;
}

/** The request's key when it is revoked and `d` could allow the request; null otherwise. */
export async function withdrawnKey(
  host: KeyCheckHost,
  teamId: string,
  row: { state: string; key_id: string; agent_options: string },
  d: DecisionInput,
): Promise<string | null> {
  if (row.state !== "pending" || !mayAllow(row.agent_options, d)) return null;
  // The hub's word, when the decision's route asked it with the decider's role (`vouchDecider`).
  if (d.keyStanding?.keyId === row.key_id) return d.keyStanding.revoked ? row.key_id : null;
  const revoked = await withDeadline(
    host.hub(teamId).keyRevokedLately(row.key_id),
    REQUEST_BUDGET_MS,
    "hub.keyRevokedLately",
  ).catch(async () => !(await keyLive(host.db, teamId, row.key_id)));
  return revoked ? row.key_id : null;
}

/** An offered option of an allowing kind, or an accepted elicitation: what a revoked key must not get. */
function mayAllow(agentOptions: string, d: DecisionInput): boolean {
  if (d.action !== undefined) return d.action === "accept";
  if (d.optionId === undefined) return false;
  const option = (JSON.parse(agentOptions) as PermissionOption[]).find((o) => o.optionId === d.optionId);
  return option !== undefined && isAllowKind(option.kind);
}
