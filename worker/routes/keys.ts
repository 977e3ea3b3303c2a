/** Agent API keys: create (shown once), list, revoke. */
import { Hono } from "hono";
import { z } from "zod";
import { requireSameOrigin, requireWeb } from "../auth";
import { newApiKey, newId } from "../crypto";
import { audit, createApiKey, listApiKeys, revokeApiKey } from "../db";
import { apiError, validate } from "../http";
import type { AppEnv } from "../types";

const createBody = z.object({ label: z.string().trim().min(1).max(100) });
const keyParam = z.object({ id: z.string().regex(/^key_[0-9A-Za-z]{22}$/, "not a key id") });

export const keyRoutes = new Hono<AppEnv>()
  .use("/v1/keys", requireWeb, requireSameOrigin)
  .use("/v1/keys/*", requireWeb, requireSameOrigin)
  .post("/v1/keys", validate("json", createBody), async (c) => {
    const w = c.get("web");
    const { key, prefix, hash } = newApiKey();
    const id = newId("key");
    const now = Date.now();
    const label = c.req.valid("json").label;
    await createApiKey(c.env.DB, { id, teamId: w.teamId, userId: w.userId, hash, prefix, label, now });
    await audit(c.env.DB, {
      eventId: `key_created:${id}`,
      teamId: w.teamId,
      at: now,
      actor: `user:${w.userId}`,
      action: "key.created",
      subject: id,
      detail: { label, prefix },
    });
    return c.json({ id, key, prefix, label, createdAt: now }, 201);
  })
  .get("/v1/keys", async (c) => {
    const w = c.get("web");
    return c.json({ keys: await listApiKeys(c.env.DB, w.teamId, w.userId) });
  })
  .delete("/v1/keys/:id", validate("param", keyParam), async (c) => {
    const w = c.get("web");
    const keyId = c.req.valid("param").id;
    const now = Date.now();
    const sessions = await revokeApiKey(c.env.DB, { teamId: w.teamId, userId: w.userId, keyId, now });
    if (!sessions) return apiError(c, 404, "not_found", "no such key");
    // Deny its pending requests and close its sockets now, not at the next reconnect.
    const denied = await Promise.all(
      sessions.map((sessionId) =>
        c.env.SESSION_GATE.get(c.env.SESSION_GATE.idFromName(`${w.teamId}/${sessionId}`)).revokeKey(w.teamId, keyId),
      ),
    );
    await audit(c.env.DB, {
      eventId: `key_revoked:${keyId}`,
      teamId: w.teamId,
      at: now,
      actor: `user:${w.userId}`,
      action: "key.revoked",
      subject: keyId,
    });
    return c.json({ id: keyId, revokedAt: now, deniedRequests: denied.reduce((a, b) => a + b, 0) });
  });
