/**
 * "Add a phone" as use cases: mint a one-time pairing token (D1 + audit) and claim one (D1 +
 * audit). The route shows the link and starts the claiming device's web session.
 *
 * Owns: the token's lifetime and the audit of both steps. Does not own: the SQL
 * (`db/passkeys.ts`), the web session (`auth.ts`).
 */
import type { ConfirmRequired } from "../../sdk/src/human/auth";
import { newSecret } from "../crypto";
import { claimPairingToken, createPairingToken, findPairingToken } from "../db";
import { DomainError } from "../errors";
import type { Env, WebIdentity } from "../types";
import { chainQueued } from "./audit";
import { auditEvents, userActor } from "./audit-events";
import { refuseUnaskedSwitch } from "./switch-account";

const PAIRING_TTL_MS = 5 * 60 * 1000;

/** A fresh one-time token for this person in this team, and when it expires. */
export async function createPairing(env: Env, p: { teamId: string; userId: string }) {
  const { token, hash: tokenHash } = newSecret();
  const now = Date.now();
  const event = auditEvents.pairingCreated(
    { teamId: p.teamId, actor: userActor(p.userId), at: now },
    { userId: p.userId, tokenHash },
  );
  await createPairingToken(env.DB, { tokenHash, ...p, now, ttlMs: PAIRING_TTL_MS }, event);
  await chainQueued(env, p.teamId);
  return { token, expiresAt: now + PAIRING_TTL_MS };
}

const invalidPairing = () =>
  new DomainError("invalid_pairing", "this pairing link is invalid, used or expired; make a new one");

/**
 * Uses a pairing token up: whom the claiming device signs in as (400 `invalid_pairing` otherwise).
 * Only on the person's tap (`confirm`): until then the token stays unused and the answer names
 * the account, `409 confirm_required`, or `409 signed_in_as_other` in a browser signed in as
 * someone else. A link opened by a scanner or a preview signs nothing in.
 */
export async function claimPairing(
  env: Env,
  c: { tokenHash: string; userAgent: string | null; current: WebIdentity | null; confirm: boolean },
) {
  const now = Date.now();
  if (!c.confirm) {
    const pending = await findPairingToken(env.DB, c.tokenHash, now);
    if (!pending) throw invalidPairing();
    refuseUnaskedSwitch(c.current, pending, false);
    const extra: ConfirmRequired = { account: { email: pending.email, name: pending.name } };
    throw new DomainError("confirm_required", `this signs this browser in as ${pending.email}; tap to go on`, {
      extra,
    });
  }
  const paired = await claimPairingToken(env.DB, c.tokenHash, now, (p) =>
    auditEvents.pairingClaimed(
      { teamId: p.teamId, actor: userActor(p.userId), at: now },
      { userId: p.userId, tokenHash: c.tokenHash, userAgent: c.userAgent },
    ),
  );
  if (!paired) throw invalidPairing();
  await chainQueued(env, paired.teamId);
  return paired;
}
