/**
 * Step-up routes (see team/step-up.ts): `POST /v1/approvals/:id/step-up` gives a decider WebAuthn
 * request options bound to that request and option; `GET /v1/approvals/:id/proof` gives anyone who
 * may read the approval what its allows' passkeys signed, to verify offline. The policy's step-up
 * is a policy route (routes/policy.ts).
 */
import { Hono } from "hono";
import { stepUpOptionsBodySchema } from "../../sdk/src/human/step-up";
import { requireFreshWeb, requireRole, requireSameOrigin, requireWeb } from "../auth";
import { relyingParty, validate } from "../http";
import { DECIDER_ROLES } from "../roles";
import { stepUpOptions, stepUpProof } from "../team/step-up";
import type { AppEnv } from "../types";

export const stepUpRoutes = new Hono<AppEnv>()
  .post(
    "/v1/approvals/:id/step-up",
    requireWeb,
    requireSameOrigin,
    // As for a decision: the role as D1 has it now.
    requireFreshWeb,
    requireRole(...DECIDER_ROLES),
    validate("json", stepUpOptionsBodySchema),
    async (c) => {
      const w = c.get("web");
      return c.json(await stepUpOptions(c.env, relyingParty(c), w, c.req.param("id"), c.req.valid("json")));
    },
  )
  .get("/v1/approvals/:id/proof", requireWeb, async (c) =>
    c.json(await stepUpProof(c.env, c.get("web").teamId, c.req.param("id"))),
  );
