/**
 * Agent API keys as use cases: create one (D1 with its audit event) and revoke one (D1 with its
 * audit event, then the team's hub, which vouches for cached keys, then every session the key
 * opened, then the chain). The key routes, the agent's self-revocation, member removal and
 * the device-code grant all come here.
 *
 * Owns: the order of those steps and what a revocation answers. Does not own: the SQL
 * (`db/keys.ts`), denying a session's requests (its SessionGate), who may revoke whose key (the
 * caller passes `userId` / `spareOwners`).
 */

import { newApiKey, newId } from "../crypto";
import { createApiKey, revokeApiKey } from "../db";
import { REQUEST_BUDGET_MS, withDeadline } from "../deadline";
import { DomainError } from "../errors";
import { sessionGate } from "../gate/api";
import { hubFor } from "../hub/api";
import type { Env } from "../types";
import { chainQueued } from "./audit";
import { auditEvents, userActor } from "./audit-events";

export interface CreatedKey {
  id: string;
  /** The key itself: shown once, never stored. */
  key: string;
  prefix: string;
  label: string;
  createdAt: number;
}

export async function createKey(env: Env, k: { teamId: string; userId: string; label: string }): Promise<CreatedKey> {
  const { key, prefix, hash } = newApiKey();
  const id = newId("key");
  const now = Date.now();
  const event = auditEvents.keyCreated(
    { teamId: k.teamId, actor: userActor(k.userId), at: now },
    { keyId: id, label: k.label, prefix },
  );
  // Checked in D1, not by the (cached) web session: a member removed a moment ago gets no key.
  if (
    !(await createApiKey(env.DB, { id, teamId: k.teamId, userId: k.userId, hash, prefix, label: k.label, now }, event))
  ) {
    throw new DomainError("unauthenticated", "you are no longer a member of this team; sign in again");
  }
  await chainQueued(env, k.teamId);
  return { id, key, prefix, label: k.label, createdAt: now };
}

export interface RevokedKey {
  id: string;
  revokedAt: number;
  deniedRequests: number;
  unreachedSessions?: number;
}

/**
 * Revokes a key of the team (with `userId`, only that user's), then denies its pending requests
 * (`key_revoked`) and closes its sockets in every session it opened, now rather than at their
 * next reconnect. Revoking again reaches the sessions again (a gate that missed it hears it
 * then). Null when no such key.
 */
export async function revokeKey(
  env: Env,
  r: { teamId: string; userId: string | null; spareOwners?: boolean; keyId: string; actor: string },
): Promise<RevokedKey | null> {
  const now = Date.now();
  const event = auditEvents.keyRevoked({ teamId: r.teamId, actor: r.actor, at: now }, r.keyId);
  const revoked = await revokeApiKey(env.DB, { ...r, spareOwners: r.spareOwners ?? false, now }, event);
  if (!revoked) return null;
  // The hub (it vouches for no isolate's cached copy of the key from now on) and every session
  // the key opened hear it before the answer. One unreachable gate must not keep the others, or
  // the hub, from hearing it; D1 already refuses the key. Each waits at most REQUEST_BUDGET_MS: a
  // gate that does not answer in time counts as unreached.
  const [hubTold, told] = await Promise.all([
    withDeadline(hubFor(env, r.teamId).keyRevoked(r.keyId), REQUEST_BUDGET_MS, "hub.keyRevoked").then(
      () => null,
      (error: unknown) => error,
    ),
    Promise.allSettled(
      revoked.sessions.map((sessionId) =>
        withDeadline(
          sessionGate(env, r.teamId, sessionId).revokeKey(r.teamId, r.keyId),
          REQUEST_BUDGET_MS,
          "gate.revokeKey",
        ),
      ),
    ),
  ]);
  await chainQueued(env, r.teamId);
  // A hub that did not hear it answers 500: the revocation stands, and revoking again tells it again.
  if (hubTold !== null) throw hubTold;
  const denied = told.reduce((sum, t) => sum + (t.status === "fulfilled" ? t.value : 0), 0);
  const unreached = told.filter((t) => t.status === "rejected").length;
  return {
    id: r.keyId,
    revokedAt: revoked.revokedAt,
    deniedRequests: denied,
    ...(unreached ? { unreachedSessions: unreached } : {}),
  };
}
