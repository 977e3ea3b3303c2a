/**
 * "Add a phone": a signed-in browser mints a one-time link (shown as a QR code); the device that
 * opens it is told whom it signs in as (`409 confirm_required`) and, on the person's tap
 * (`confirm: true`), is signed in as the same user, in the same team, and can then make its own passkey.
 */
import { Hono } from "hono";
import { pairingClaimBodySchema } from "../../sdk/src/human/auth";
import { emptyBodySchema } from "../../sdk/src/human/common";
import { currentWeb, requireRecentSignIn, requireSameOrigin, requireWeb, startWebSession } from "../auth";
import { sha256Hex } from "../crypto";
import { appOrigin, validate } from "../http";
import { claimPairing, createPairing } from "../team/pairing";
import type { AppEnv } from "../types";

export const pairingRoutes = new Hono<AppEnv>()
  // A claim signs a device in afresh (it may then add a passkey), so minting one needs a recent sign-in.
  .post(
    "/v1/pairing",
    requireWeb,
    requireSameOrigin,
    requireRecentSignIn,
    validate("json", emptyBodySchema),
    async (c) => {
      const w = c.get("web");
      const { token, expiresAt } = await createPairing(c.env, { teamId: w.teamId, userId: w.userId });
      return c.json({ url: `${appOrigin(c)}/pair?token=${token}`, expiresAt }, 201);
    },
  )
  .post("/v1/pairing/claim", requireSameOrigin, validate("json", pairingClaimBodySchema), async (c) => {
    const { token, confirm = false } = c.req.valid("json");
    const paired = await claimPairing(c.env, {
      tokenHash: sha256Hex(token),
      userAgent: c.req.header("User-Agent")?.slice(0, 200) ?? null,
      current: await currentWeb(c),
      confirm,
    });
    await startWebSession(c, paired.userId, paired.teamId, "pairing");
    return c.json({ ok: true });
  });
