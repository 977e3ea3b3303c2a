/**
 * "Add a phone": a signed-in browser mints a one-time link (shown as a QR code); the device that
 * opens it is signed in as the same user, in the same team, and can then make its own passkey.
 */
import { Hono } from "hono";
import { z } from "zod";
import { requireSameOrigin, requireWeb, startWebSession } from "../auth";
import { sha256Hex } from "../crypto";
import { appOrigin, validate } from "../http";
import { claimPairing, createPairing } from "../team/pairing";
import type { AppEnv } from "../types";

const claimBody = z.object({ token: z.string().regex(/^[A-Za-z0-9_-]{43}$/, "not a pairing token") });

export const pairingRoutes = new Hono<AppEnv>()
  .post("/v1/pairing", requireWeb, requireSameOrigin, validate("json", z.object({})), async (c) => {
    const w = c.get("web");
    const { token, expiresAt } = await createPairing(c.env, { teamId: w.teamId, userId: w.userId });
    return c.json({ url: `${appOrigin(c)}/pair?token=${token}`, expiresAt }, 201);
  })
  .post("/v1/pairing/claim", requireSameOrigin, validate("json", claimBody), async (c) => {
    const paired = await claimPairing(c.env, {
      tokenHash: sha256Hex(c.req.valid("json").token),
      userAgent: c.req.header("User-Agent")?.slice(0, 200) ?? null,
    });
    await startWebSession(c, paired.userId, paired.teamId, "pairing");
    return c.json({ ok: true });
  });
