/**
 * Passkeys as use cases: adding one to a person (D1 + audit in their team) and removing one.
 * Reached from the passkey routes and from an email-link sign-up that brings a parked passkey.
 *
 * Owns: storing with the audit event queued in the same batch. Does not own: WebAuthn verification and challenges
 * (`routes/passkeys.ts`), the SQL (`db/passkeys.ts`).
 */
import { deletePasskey, insertPasskey, type NewPasskey } from "../db";
import { DomainError } from "../errors";
import type { Env } from "../types";
import { chainQueued } from "./audit";
import { auditEvents, userActor } from "./audit-events";

/** Stores a passkey for a user and audits it in their team; false if that credential id exists. */
export async function addPasskey(
  env: Env,
  p: { passkey: NewPasskey; userId: string; teamId: string; now: number },
): Promise<boolean> {
  const event = auditEvents.passkeyAdded(
    { teamId: p.teamId, actor: userActor(p.userId), at: p.now },
    { userId: p.userId, credentialId: p.passkey.id, deviceName: p.passkey.deviceName },
  );
  if (!(await insertPasskey(env.DB, p, event))) return false;
  await chainQueued(env, p.teamId);
  return true;
}

/** Removes one of the person's passkeys (404 when they have none by that id). */
export async function removePasskey(env: Env, r: { teamId: string; userId: string; credentialId: string }) {
  const event = auditEvents.passkeyRemoved(
    { teamId: r.teamId, actor: userActor(r.userId), at: Date.now() },
    { userId: r.userId, credentialId: r.credentialId },
  );
  if (!(await deletePasskey(env.DB, r.userId, r.credentialId, event))) {
    throw new DomainError("not_found", "no such passkey");
  }
  await chainQueued(env, r.teamId);
}
