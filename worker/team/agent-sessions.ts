/**
 * An agent key joining a session, before any socket or HTTP request reaches its SessionGate:
 * the key's use of the session is recorded in D1 (the first key's user owns the session) and the
 * join carries the team policy as the team's hub has it, the one path policy takes to sessions.
 *
 * Owns: who may join which session, and what a join tells the gate. Does not own: the SQL
 * (`db/sessions.ts`), holding requests (the gate), the policy's current value (the hub).
 */
import { AGENT_KEY_CACHE_MS, joinAgentSession, touchApiKey } from "../db";
import { orFallback, REQUEST_BUDGET_MS } from "../deadline";
import { DomainError } from "../errors";
import { sessionGate } from "../gate/api";
import { hubFor } from "../hub/api";
import { IsolateCache } from "../isolate-cache";
import type { AgentIdentity, Env } from "../types";

export const badKey = () => new DomainError("bad_api_key", "the API key is unknown or revoked");

/**
 * A key's `lastUsedAt` is kept to the minute: a busy key (a fleet of sessions on one key) marks
 * itself once a minute per isolate, not with a D1 write on every join.
 */
const TOUCH_EVERY_MS = 60_000;
const touchedAt = new Map<string, number>();

function touchSometimes(env: Env, keyId: string, now: number, later: (work: Promise<unknown>) => void): void {
  if (now - (touchedAt.get(keyId) ?? Number.NEGATIVE_INFINITY) < TOUCH_EVERY_MS) return;
  if (touchedAt.size > 5000) touchedAt.clear();
  touchedAt.set(keyId, now);
  later(touchApiKey(env.DB, keyId, now));
}

/**
 * A key that joined a session through this isolate lately joins it again without D1: the link a
 * revocation follows is in D1 already, a session's owner never changes, and the key was checked
 * just now (D1, or the team's hub vouching for the isolate's copy: `auth.ts`). So an HTTP agent's
 * requests on one session, or a socket's reconnects, cost D1 one join every AGENT_KEY_CACHE_MS.
 */
const recentJoins = new IsolateCache<"ok">(AGENT_KEY_CACHE_MS);

/**
 * Registers the key's use of the session and answers its gate and the join to hand it. Refused
 * with 403 if another user owns the session, 401 if the key was just revoked. `later` runs work
 * the answer need not wait for (marking the key used, at most once a minute).
 */
export async function joinSession(
  env: Env,
  agent: AgentIdentity,
  sessionId: string,
  later: (work: Promise<unknown>) => void,
) {
  const now = Date.now();
  const joinKey = `${agent.keyId}/${sessionId}`;
  const remembered = recentJoins.get(joinKey, now);
  const [joined, team] = await Promise.all([
    remembered ?? joinAgentSession(env.DB, { ...agent, sessionId, now }),
    // Late, the join carries no policy: the gate keeps the session's last one (or refuses a new session).
    orFallback(hubFor(env, agent.teamId).policy(agent.teamId), REQUEST_BUDGET_MS, "hub.policy", null),
  ]);
  if (joined === "forbidden") {
    throw new DomainError("forbidden", "this session belongs to another user; use a new session id");
  }
  if (joined === "revoked") throw badKey();
  // Remembered from D1's answer only, so D1 still sees the session's use (last_seen_at) every so often.
  if (!remembered) recentJoins.set(joinKey, joined, now);
  touchSometimes(env, agent.keyId, now, later);
  return {
    gate: sessionGate(env, agent.teamId, sessionId),
    join: {
      ...agent,
      sessionId,
      ownerUserId: agent.userId,
      policy: team?.policy ?? null,
      policyVersion: team?.version ?? 0,
    },
  };
}
