/**
 * "Add a phone": a signed-in browser mints a one-time link (shown as a QR code); the device that
 * opens it is signed in as the same user, in the same team, and can then make its own passkey.
 */
import { Hono } from "hono";
import { pairingClaimBodySchema } from "../../sdk/src/human/auth";
import { emptyBodySchema } from "../../sdk/src/human/common";
import { requireSameOrigin, requireWeb, startWebSession } from "../auth";
import { newSecret, sha256Hex } from "../crypto";
import { audit, claimPairingToken, createPairingToken } from "../db";
import { apiError, appOrigin, validate } from "../http";
import type { AppEnv } from "../types";

const PAIRING_TTL_MS = 5 * 60 * 1000;

export const pairingRoutes = new Hono<AppEnv>()
  .post("/v1/pairing", requireWeb, requireSameOrigin, validate("json", emptyBodySchema), async (c) => {
    const w = c.get("web");
    const { token, hash: tokenHash } = newSecret();
    const now = Date.now();
    await createPairingToken(c.env.DB, { tokenHash, userId: w.userId, teamId: w.teamId, now, ttlMs: PAIRING_TTL_MS });
    await audit(c.env, {
      eventId: `pairing_created:${tokenHash}`,
      teamId: w.teamId,
      at: now,
      actor: `user:${w.userId}`,
      action: "pairing.created",
      subject: w.userId,
    });
    return c.json({ url: `${appOrigin(c)}/pair?token=${token}`, expiresAt: now + PAIRING_TTL_MS }, 201);
  })
  .post("/v1/pairing/claim", requireSameOrigin, validate("json", pairingClaimBodySchema), async (c) => {
    const tokenHash = sha256Hex(c.req.valid("json").token);
    const now = Date.now();
    const paired = await claimPairingToken(c.env.DB, tokenHash, now);
    if (!paired) {
      return apiError(c, "invalid_pairing", "this pairing link is invalid, used or expired; make a new one");
    }
    await startWebSession(c, paired.userId, paired.teamId, "pairing");
    await audit(c.env, {
      eventId: `pairing_claimed:${tokenHash}`,
      teamId: paired.teamId,
      at: now,
      actor: `user:${paired.userId}`,
      action: "pairing.claimed",
      subject: paired.userId,
      detail: { userAgent: c.req.header("User-Agent")?.slice(0, 200) ?? null },
    });
    return c.json({ ok: true });
  });
