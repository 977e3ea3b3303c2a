/**
 * Agent API keys: create (shown once), list, revoke (here, or by the agent itself: DELETE /v1/agent/me).
 * Owners and admins see and revoke every key of the team; others only their own.
 */
import { Hono } from "hono";
import { createKeyBodySchema, keyListQuerySchema, keyParamSchema } from "../../sdk/src/human/team";
import { requireFreshWeb, requireSameOrigin, requireWeb } from "../auth";
import { listApiKeys } from "../db";
import { DomainError } from "../errors";
import { validate } from "../http";
import { ADMIN_ROLES } from "../roles";
import { createKey, revokeKey } from "../team/keys";
import type { AppEnv } from "../types";

export const keyRoutes = new Hono<AppEnv>()
  // The role as D1 has it now (who sees and revokes the team's keys), never the cached copy.
  .use("/v1/keys", requireWeb, requireSameOrigin, requireFreshWeb)
  .use("/v1/keys/*", requireWeb, requireSameOrigin, requireFreshWeb)
  .post("/v1/keys", validate("json", createKeyBodySchema), async (c) => {
    const w = c.get("web");
    return c.json(
      await createKey(c.env, { teamId: w.teamId, userId: w.userId, label: c.req.valid("json").label }),
      201,
    );
  })
  .get("/v1/keys", validate("query", keyListQuerySchema), async (c) => {
    const w = c.get("web");
    const team = c.req.valid("query").scope === "team";
    if (team && !ADMIN_ROLES.includes(w.role)) {
      throw new DomainError("forbidden", `your role (${w.role}) may only list your own keys`);
    }
    return c.json({ keys: await listApiKeys(c.env.DB, w.teamId, team ? null : w.userId) });
  })
  .delete("/v1/keys/:id", validate("param", keyParamSchema), async (c) => {
    const w = c.get("web");
    const admin = ADMIN_ROLES.includes(w.role);
    const revoked = await revokeKey(c.env, {
      teamId: w.teamId,
      userId: admin ? null : w.userId,
      // Only owners touch owners: an admin may revoke any key but an owner's.
      spareOwners: w.role === "admin",
      keyId: c.req.valid("param").id,
      actor: `user:${w.userId}`,
    });
    if (!revoked) throw new DomainError("not_found", "no such key");
    return c.json(revoked);
  });
