/**
 * Passkeys as use cases: adding one to a person (D1 + audit in their team) and removing one.
 * Reached from the passkey routes and from an email-link sign-up that brings a parked passkey.
 *
 * Owns: storing-then-auditing. Does not own: WebAuthn verification and challenges
 * (`routes/passkeys.ts`), the SQL (`db/passkeys.ts`).
 */
import { deletePasskey, insertPasskey, type NewPasskey } from "../db";
import { DomainError } from "../errors";
import type { Env } from "../types";
import { appendAudit } from "./audit";
import { auditEvents, userActor } from "./audit-events";

/** Stores a passkey for a user and audits it in their team; false if that credential id exists. */
export async function addPasskey(
  env: Env,
  p: { passkey: NewPasskey; userId: string; teamId: string; now: number },
): Promise<boolean> {
  if (!(await insertPasskey(env.DB, p))) return false;
  await appendAudit(
    env,
    auditEvents.passkeyAdded(
      { teamId: p.teamId, actor: userActor(p.userId), at: p.now },
      { userId: p.userId, credentialId: p.passkey.id, deviceName: p.passkey.deviceName },
    ),
  );
  return true;
}

/** Removes one of the person's passkeys (404 when they have none by that id). */
export async function removePasskey(env: Env, r: { teamId: string; userId: string; credentialId: string }) {
  if (!(await deletePasskey(env.DB, r.userId, r.credentialId))) throw new DomainError("not_found", "no such passkey");
  const now = Date.now();
  await appendAudit(
    env,
    auditEvents.passkeyRemoved(
      { teamId: r.teamId, actor: userActor(r.userId), at: now },
      { userId: r.userId, credentialId: r.credentialId },
    ),
  );
}
