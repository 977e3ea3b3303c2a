/**
 * Agent API keys: create (shown once), list, revoke (here, or by the agent itself: DELETE /v1/agent/me).
 * Owners and admins see and revoke every key of the team; others only their own.
 */
import { Hono } from "hono";
import { createKeyBodySchema, keyListQuerySchema, keyParamSchema } from "../../sdk/src/human/team";
import { requireSameOrigin, requireWeb } from "../auth";
import { newApiKey, newId } from "../crypto";
import { audit, createApiKey, listApiKeys, revokeApiKey } from "../db";
import { apiError, validate } from "../http";
import { ADMIN_ROLES } from "../roles";
import { sessionGate } from "../session-gate";
import type { AppEnv, Env } from "../types";

export const keyRoutes = new Hono<AppEnv>()
  .use("/v1/keys", requireWeb, requireSameOrigin)
  .use("/v1/keys/*", requireWeb, requireSameOrigin)
  .post("/v1/keys", validate("json", createKeyBodySchema), async (c) => {
    const w = c.get("web");
    const { key, prefix, hash } = newApiKey();
    const id = newId("key");
    const now = Date.now();
    const label = c.req.valid("json").label;
    await createApiKey(c.env.DB, { id, teamId: w.teamId, userId: w.userId, hash, prefix, label, now });
    await audit(c.env, {
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
  .get("/v1/keys", validate("query", keyListQuerySchema), async (c) => {
    const w = c.get("web");
    const team = c.req.valid("query").scope === "team";
    if (team && !ADMIN_ROLES.includes(w.role)) {
      return apiError(c, "forbidden", `your role (${w.role}) may only list your own keys`);
    }
    return c.json({ keys: await listApiKeys(c.env.DB, w.teamId, team ? null : w.userId) });
  })
  .delete("/v1/keys/:id", validate("param", keyParamSchema), async (c) => {
    const w = c.get("web");
    const keyId = c.req.valid("param").id;
    const admin = ADMIN_ROLES.includes(w.role);
    const revoked = await revokeKey(c.env, {
      teamId: w.teamId,
      userId: admin ? null : w.userId,
      // Only owners touch owners: an admin may revoke any key but an owner's.
      spareOwners: w.role === "admin",
      keyId,
      actor: `user:${w.userId}`,
    });
    return revoked ? c.json(revoked) : apiError(c, "not_found", "no such key");
  });

/**
 * Revokes a key of the team (with `userId`, only that user's), then denies its pending requests
 * (`key_revoked`) and closes its sockets in every session it opened, now rather than at their
 * next reconnect. Revoking again reaches the sessions again (a gate that missed it hears it
 * then). Null when no such key.
 */
export async function revokeKey(
  env: Env,
  r: { teamId: string; userId: string | null; spareOwners?: boolean; keyId: string; actor: string },
) {
  const now = Date.now();
  const revoked = await revokeApiKey(env.DB, { ...r, spareOwners: r.spareOwners ?? false, now });
  if (!revoked) return null;
  // One unreachable gate must not keep the others from hearing it; D1 already refuses the key.
  const told = await Promise.allSettled(
    revoked.sessions.map((sessionId) => sessionGate(env, r.teamId, sessionId).revokeKey(r.teamId, r.keyId)),
  );
  await audit(env, {
    eventId: `key_revoked:${r.keyId}`,
    teamId: r.teamId,
    at: revoked.revokedAt,
    actor: r.actor,
    action: "key.revoked",
    subject: r.keyId,
  });
  const denied = told.reduce((sum, t) => sum + (t.status === "fulfilled" ? t.value : 0), 0);
  const unreached = told.filter((t) => t.status === "rejected").length;
  return {
    id: r.keyId,
    revokedAt: revoked.revokedAt,
    deniedRequests: denied,
    ...(unreached ? { unreachedSessions: unreached } : {}),
  };
}
