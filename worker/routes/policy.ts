/**
 * The team policy: read it, and (owners and admins) replace it; only owners change its `limits`.
 * A change is audited and applies to requests opened from then on, in open sessions too (see
 * team/policy.ts).
 */
import { Hono } from "hono";
import { policyBodySchema } from "../../sdk/src/human/policy";
import { requireFreshWeb, requireRole, requireSameOrigin, requireWeb } from "../auth";
import { getTeamPolicy } from "../db";
import { validate } from "../http";
import { ADMIN_ROLES } from "../roles";
import { changePolicy } from "../team/policy";
import type { AppEnv } from "../types";

export const policyRoutes = new Hono<AppEnv>()
  .use("/v1/policy", requireWeb, requireSameOrigin)
  .get("/v1/policy", async (c) => c.json((await getTeamPolicy(c.env.DB, c.get("web").teamId)).policy))
  .put("/v1/policy", requireFreshWeb, requireRole(...ADMIN_ROLES), validate("json", policyBodySchema), async (c) => {
    const w = c.get("web");
    const body = c.req.valid("json");
    return c.json(await changePolicy(c.env, { teamId: w.teamId, userId: w.userId, role: w.role, body }));
  });
