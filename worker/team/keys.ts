/**
 * Agent API keys as use cases: create one (D1 with its audit event) and revoke one (D1 with its
 * audit event, then the team's hub, which vouches for cached keys and fans the revocation out to
 * every session the key opened, `hub/revocations.ts`, then the chain). The key routes, the agent's self-revocation, member removal and
 * the device-code grant all come here.
 *
 * Owns: the order of those steps and what a revocation answers. Does not own: the SQL
 * (`db/keys.ts`), the fan-out (the hub's `revocations.ts`), denying a session's requests (its
 * SessionGate), who may revoke whose key (the caller passes `userId` / `spareOwners`).
 */
import { ceilingsOf, overCeiling } from "../ceilings";
import { newApiKey, newId } from "../crypto";
import { createApiKey, revokeApiKey } from "../db";
import { REQUEST_BUDGET_MS, withDeadline } from "../deadline";
import { DomainError } from "../errors";
import { sessionGate } from "../gate/api";
import { hubFor } from "../hub/api";
import { REVOCATION_FANOUT_PER_RUN } from "../hub/revocations";
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
  const ceiling = ceilingsOf(env).keysPerTeam;
  const row = { id, teamId: k.teamId, userId: k.userId, hash, prefix, label: k.label, now };
  const made = await createApiKey(env.DB, row, ceiling, event);
  if (made === "not_member") {
    throw new DomainError("unauthenticated", "you are no longer a member of this team; sign in again");
  }
  if (made === "over_ceiling") throw keysOverCeiling(ceiling);
  await chainQueued(env, k.teamId);
  return { id, key, prefix, label: k.label, createdAt: now };
}

/** The team has as many keys as this server allows (revoked ones count for a day after they were made). */
export function keysOverCeiling(ceiling: number): DomainError {
  return overCeiling(
    "keysPerTeam",
    ceiling,
    "API keys per team (keys made in the last 24 h count even once revoked); revoke one",
  );
}

export interface RevokedKey {
  id: string;
  revokedAt: number;
  deniedRequests: number;
  unreachedSessions?: number;
}

/**
 * Revokes a key of the team (with `userId`, only that user's) in D1, then hands it to the team's
 * hub, which refuses the key from then on and tells every session the key opened (its pending
 * requests denied `key_revoked`, its sockets closed), durably: the first ones before this
 * answers, the rest and any that failed from its alarm, until each acknowledged. Revoking again
 * reaches the sessions again. Null when no such key.
 */
export async function revokeKey(
  env: Env,
  r: { teamId: string; userId: string | null; spareOwners?: boolean; keyId: string; actor: string },
): Promise<RevokedKey | null> {
  const now = Date.now();
  const event = auditEvents.keyRevoked({ teamId: r.teamId, actor: r.actor, at: now }, r.keyId);
  const revoked = await revokeApiKey(env.DB, { ...r, spareOwners: r.spareOwners ?? false, now }, event);
  if (!revoked) return null;
  // D1 already refuses the key. A hub that did not answer within REQUEST_BUDGET_MS makes the
  // route answer 503 service_unavailable (one that threw: 500): the revocation stands, the first
  // sessions are told from here once (each within the same budget), and revoking again tells the hub again.
  const told = await withDeadline(
    hubFor(env, r.teamId).keyRevoked(r.teamId, r.keyId, revoked.sessions),
    REQUEST_BUDGET_MS,
    "hub.keyRevoked",
  )
    .catch(async (error: unknown) => {
      const first = revoked.sessions.slice(0, REVOCATION_FANOUT_PER_RUN);
      await Promise.allSettled(
        first.map((id) =>
          withDeadline(
            sessionGate(env, r.teamId, id).revokeKey(r.teamId, r.keyId),
            REQUEST_BUDGET_MS,
            "gate.revokeKey",
          ),
        ),
      );
      throw error;
    })
    .finally(() => chainQueued(env, r.teamId));
  return {
    id: r.keyId,
    revokedAt: revoked.revokedAt,
    deniedRequests: told.deniedRequests,
    ...(told.unreachedSessions ? { unreachedSessions: told.unreachedSessions } : {}),
  };
}
