/**
 * The team policy. A change is audited (before/after) and applies to requests opened from then
 * on: HTTP-held requests read it at each open; sessions with an open socket get it from the
 * team's hub, which knows which sessions are connected (see hub/sessions.ts).
 */
import { Hono } from "hono";
import { requireRole, requireSameOrigin, requireWeb } from "../auth";
import { audit, getTeamPolicy, setTeamPolicy } from "../db";
import { validate } from "../http";
import { hubFor } from "../hub/api";
import { teamPolicySchema } from "../policy";
import { ADMIN_ROLES } from "../roles";
import type { AppEnv } from "../types";

export const policyRoutes = new Hono<AppEnv>()
  .use("/v1/policy", requireWeb, requireSameOrigin)
  .get("/v1/policy", async (c) => c.json((await getTeamPolicy(c.env.DB, c.get("web").teamId)).policy))
  .put("/v1/policy", requireRole(...ADMIN_ROLES), validate("json", teamPolicySchema.strict()), async (c) => {
    const w = c.get("web");
    const policy = c.req.valid("json");
    const { before, version } = await setTeamPolicy(c.env.DB, w.teamId, policy);
    const now = Date.now();
    await audit(c.env, {
      eventId: `policy_changed:${w.teamId}:${version}`,
      teamId: w.teamId,
      at: now,
      actor: `user:${w.userId}`,
      action: "team.policy_changed",
      subject: w.teamId,
      detail: { before, after: policy, version },
    });
    // The hub hands it to every connected session; a gate that misses it still gets it, from the
    // hub when it next reports, or at its next join.
    await hubFor(c.env, w.teamId).policyChanged();
    return c.json(policy);
  });
