/** The human side of approvals: list, read, a card's rule choices (team/rule-choices.ts), decide (one, or a batch: team/decision-batch.ts), claim (team/approvals.ts). */
import type { AuthenticationResponseJSON } from "@simplewebauthn/server";
import { type Context, Hono } from "hono";
import {
  type AnyDecisionBody,
  anyDecisionBodySchema,
  approvalListQuerySchema,
  decisionBatchBodySchema,
} from "../../sdk/src/human/approvals";
import {
  requireCurrentDecider,
  requireCurrentWeb,
  requireFreshWeb,
  requireRole,
  requireSameOrigin,
  requireWeb,
} from "../auth";
import { listApprovals } from "../db";
import { cursorParam, deviceOf, nextCursor, relyingParty, validate } from "../http";
import { DECIDER_ROLES } from "../roles";
import { claimApproval, type DecisionRequest, decideApproval, readApproval } from "../team/approvals";
import { decideBatch } from "../team/decision-batch";
import { ruleChoicesFor } from "../team/rule-choices";
import type { AppEnv } from "../types";

const listQuery = approvalListQuerySchema.extend({ cursor: cursorParam.optional() });

export const approvalRoutes = new Hono<AppEnv>()
  .use("/v1/approvals", requireWeb)
  .use("/v1/approvals/*", requireWeb, requireSameOrigin)
  .get("/v1/approvals", validate("query", listQuery), async (c) => {
    const w = c.get("web");
    const q = c.req.valid("query");
    const approvals = await listApprovals(c.env.DB, {
      teamId: w.teamId,
      userId: w.userId,
      state: q.state,
      scope: q.scope,
      cursor: q.cursor ?? null,
      limit: q.limit,
    });
    return c.json({ approvals, cursor: nextCursor(approvals, q.limit) });
  })
  .get("/v1/approvals/:id", async (c) => c.json(await readApproval(c.env, c.get("web").teamId, c.req.param("id"))))
  // What the card's "Allow for 1 h" may make, and what each choice would have allowed (team/rule-choices.ts).
  .get("/v1/approvals/:id/rule-choices", requireRole(...DECIDER_ROLES), async (c) => {
    const w = c.get("web");
    return c.json(await ruleChoicesFor(c.env, { teamId: w.teamId, userId: w.userId }, c.req.param("id")));
  })
  .post(
    "/v1/approvals/:id/decision",
    // The role as it is now, not as cached: a member removed or demoted a moment ago decides nothing.
    requireCurrentDecider,
    requireRole(...DECIDER_ROLES),
    validate("json", anyDecisionBodySchema),
    async (c) => {
      const approval = await decideApproval(c.env, decisionRequest(c, c.req.param("id"), c.req.valid("json")));
      return c.json(approval, 200);
    },
  )
  // Each item exactly as the single route above decides it (team/decision-batch.ts).
  .post(
    "/v1/approvals/decisions",
    requireCurrentWeb,
    requireRole(...DECIDER_ROLES),
    validate("json", decisionBatchBodySchema),
    async (c) => {
      const { decisions } = c.req.valid("json");
      const results = await decideBatch(decisions, ({ approvalId, ...body }) =>
        decideApproval(c.env, decisionRequest(c, approvalId, body)),
      );
      return c.json({ results }, 200);
    },
  )
  // A claim shows teammates who is looking: only someone who may decide now (D1's role) claims.
  .post("/v1/approvals/:id/claim", requireFreshWeb, requireRole(...DECIDER_ROLES), async (c) => {
    const w = c.get("web");
    return c.json(await claimApproval(c.env, w.teamId, c.req.param("id"), { userId: w.userId, name: w.name }), 200);
  });

/**
 * A decision as the use case takes it: who decides (from the web session), from where, and the
 * body: a permission's option (with `rule`, `reason`, and a step-up the use case verifies) or an
 * elicitation's answer.
 */
function decisionRequest(c: Context<AppEnv>, approvalId: string, body: AnyDecisionBody): DecisionRequest {
  const w = c.get("web");
  const { stepUp, ...answer } = "stepUp" in body ? body : { ...body, stepUp: undefined };
  // The client's fields first: who decides, in which team, comes from the session and is set after them.
  return {
    ...answer,
    ...(stepUp && { stepUp: { assertion: stepUp as AuthenticationResponseJSON, relyingParty: relyingParty(c) } }),
    approvalId,
    teamId: w.teamId,
    userId: w.userId,
    name: w.name,
    role: w.role,
    device: deviceOf(c),
    keyStanding: c.get("keyStanding"),
  };
}
