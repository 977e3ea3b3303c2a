/**
 * Holding one permission request inside one HTTP request, for the routes whose caller waits on
 * the open connection (Claude Code's HTTP hook, the MCP tools over Streamable HTTP): join the
 * session, open the request on its gate (HTTP-held, like the long poll), then poll the gate, each
 * poll ≤ `MAX_WAIT_SECONDS` and renewing the lease, until it ends or the hold's deadline passes,
 * when the request is withdrawn (a human's decision that won that race still counts).
 *
 * Owns: the hold loop and what it came to (`Asked`). Does not own: the request's card (each
 * route's mapping), admission and resolution (the gate), what an answer means
 * (`sdk/src/hooks/decision.ts`). A caller that goes away stops polling; the lease then lapses
 * (`agent_disconnected`, `LEASE_MS`).
 */

import type { AgentAsk } from "../../sdk/src/elicitation-protocol";
import type { Asked } from "../../sdk/src/hooks/decision";
import { withTimeoutMeta } from "../../sdk/src/params";
import type { HelloParams } from "../../sdk/src/protocol";
import { type HttpOpenResult, type HttpPollResult, MAX_WAIT_SECONDS } from "../gate/api";
import type { AgentIdentity, Env } from "../types";
import { joinSession } from "./agent-sessions";

export interface Hold {
  /** `_meta.tapgate.timeoutMs` of the request: its lifetime (the team's may be shorter). */
  lifetimeMs?: number;
  /** Withdraw the request this long after it was asked; absent: once its own expiry passed. */
  answerByMs?: number;
  /** Told once the request is open: a human may see it from then on. */
  onOpened?: () => void;
}

/** Past its expiry, a request the gate's alarm has not ended yet is withdrawn after this grace. */
const EXPIRY_GRACE_MS = 5_000;

export async function holdOverHttp(
  env: Env,
  agent: AgentIdentity,
  params: AgentAsk,
  info: HelloParams,
  hold: Hold,
  later: (work: Promise<unknown>) => void,
): Promise<Asked> {
  const asked = Date.now();
  const session = await joinSession(env, agent, params.sessionId, later);
  const { lifetimeMs, answerByMs } = hold;
  const ask = lifetimeMs === undefined ? params : withTimeoutMeta(params, lifetimeMs);
  const opened = (await session.gate.openOverHttp(session.join, ask, info)) as unknown as HttpOpenResult;
  if (!opened.ok) return { failed: `Tapgate: ${opened.message}` };
  hold.onOpened?.();
  const deadline = answerByMs === undefined ? opened.expiresAt + EXPIRY_GRACE_MS : asked + answerByMs;
  const timeoutMs = lifetimeMs ?? opened.expiresAt - asked;
  const caller = { teamId: agent.teamId, userId: agent.userId, keyId: agent.keyId };
  for (;;) {
    const left = deadline - Date.now();
    const result = (
      left > 0
        ? await session.gate.poll(caller, opened.approvalId, Math.min(left, MAX_WAIT_SECONDS * 1000))
        : await session.gate.cancelOverHttp(caller, opened.approvalId)
    ) as HttpPollResult;
    if (!result.ok) return { failed: "Tapgate: the request is gone" };
    const body = result.body;
    if (body.state === "pending") continue;
    if (body.reason === "agent_cancelled")
      return { failed: `Tapgate: no decision within ${Math.round(timeoutMs / 1000)} s` };
    // A permission request was asked, so the answer has an outcome; anything else is no allow.
    if (!("outcome" in body)) return { failed: "Tapgate: the service answered something other than a decision" };
    return { answer: { outcome: body.outcome, _meta: body._meta }, waitedMs: Date.now() - asked, timeoutMs };
  }
}
