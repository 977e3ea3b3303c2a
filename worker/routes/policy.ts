/**
 * The team policy: read it, and (owners and admins) replace it; only owners change its `limits`,
 * and only owners weaken it, with their passkey over that change (`POST /v1/policy/step-up`
 * gives the options). A change is audited and applies to requests opened from then on, in open
 * sessions too (see team/policy.ts, team/policy-step-up.ts).
 */
import type { AuthenticationResponseJSON } from "@simplewebauthn/server";
import { Hono } from "hono";
import { policyPutBodySchema } from "../../sdk/src/human/policy";
import { policyStepUpBodySchema } from "../../sdk/src/human/step-up";
import { requireFreshWeb, requireRole, requireSameOrigin, requireWeb } from "../auth";
import { getTeamPolicy } from "../db";
import { appOrigin, relyingParty, validate } from "../http";
import { ADMIN_ROLES } from "../roles";
import { changePolicy } from "../team/policy";
import { policyStepUpOptions } from "../team/policy-step-up";
import type { AppEnv } from "../types";

export const policyRoutes = new Hono<AppEnv>()
  .use("/v1/policy", requireWeb, requireSameOrigin)
  .get("/v1/policy", async (c) => c.json((await getTeamPolicy(c.env.DB, c.get("web").teamId)).policy))
  // The role as D1 has it now: a demoted admin changes nothing.
  .put("/v1/policy", requireFreshWeb, requireRole(...ADMIN_ROLES), validate("json", policyPutBodySchema), async (c) => {
    const w = c.get("web");
    const { stepUp, ...body } = c.req.valid("json");
    return c.json(
      await changePolicy(c.env, {
        ...w,
        body,
        stepUp: stepUp && { assertion: stepUp as AuthenticationResponseJSON, relyingParty: relyingParty(c) },
        origin: appOrigin(c),
      }),
    );
  })
  .post(
    "/v1/policy/step-up",
    requireWeb,
    requireSameOrigin,
    requireFreshWeb,
    requireRole(...ADMIN_ROLES),
    validate("json", policyStepUpBodySchema),
    async (c) => c.json(await policyStepUpOptions(c.env, relyingParty(c), c.get("web"), c.req.valid("json").policy)),
  );
