/** The human side of approvals: list, read, decide (one, or a batch: team/decision-batch.ts), claim (team/approvals.ts). */
import { Hono } from "hono";
import {
  approvalListQuerySchema,
  type DecisionBody,
  decisionBatchBodySchema,
  decisionBodySchema,
} from "../../sdk/src/human/approvals";
import { requireFreshWeb, requireRole, requireSameOrigin, requireWeb } from "../auth";
import { listApprovals } from "../db";
import type { DecisionInput } from "../gate/api";
import { cursorParam, nextCursor, validate } from "../http";
import { DECIDER_ROLES } from "../roles";
import { claimApproval, decideApproval, readApproval } from "../team/approvals";
import { decideBatch } from "../team/decision-batch";
import type { AppEnv, WebIdentity } from "../types";

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
  .post(
    "/v1/approvals/:id/decision",
    // The role as D1 has it now, not as cached: a member removed or demoted a moment ago decides nothing.
    requireFreshWeb,
    requireRole(...DECIDER_ROLES),
    validate("json", decisionBodySchema),
    async (c) => {
      const device = deviceName(c.req.header("X-Tapgate-Device"));
      const body = c.req.valid("json");
      const approval = await decideApproval(c.env, decisionInput(c.get("web"), device, c.req.param("id"), body));
      return c.json(approval, 200);
    },
  )
  // Each item exactly as the single route above decides it (team/decision-batch.ts).
  .post(
    "/v1/approvals/decisions",
    requireFreshWeb,
    requireRole(...DECIDER_ROLES),
    validate("json", decisionBatchBodySchema),
    async (c) => {
      const device = deviceName(c.req.header("X-Tapgate-Device"));
      const { decisions } = c.req.valid("json");
      const results = await decideBatch(decisions, ({ approvalId, ...body }) =>
        decideApproval(c.env, decisionInput(c.get("web"), device, approvalId, body)),
      );
      return c.json({ results }, 200);
    },
  )
  // A claim decides nothing, so the cached role is enough (no D1 read on every card opened).
  .post("/v1/approvals/:id/claim", requireRole(...DECIDER_ROLES), async (c) => {
    const w = c.get("web");
    return c.json(await claimApproval(c.env, w.teamId, c.req.param("id"), { userId: w.userId, name: w.name }), 200);
  });

/** A decision as the gate takes it: who decides (from the web session), from where, and the body. */
function decisionInput(w: WebIdentity, device: string, approvalId: string, body: DecisionBody): DecisionInput {
  const { optionId, requestHash, rule, reason } = body;
  return {
    approvalId,
    teamId: w.teamId,
    userId: w.userId,
    name: w.name,
    role: w.role,
    device,
    optionId,
    requestHash,
    ...(rule && { rule }),
    ...(reason !== undefined && { reason }),
  };
}

/**
 * The device or surface a decision came from. Browsers only send Latin-1 header values, so the
 * app percent-encodes the name; anything undecodable is shown as sent.
 */
function deviceName(header: string | undefined): string {
  if (!header) return "web";
  try {
    return decodeURIComponent(header).slice(0, 64) || "web";
  } catch {
    return header.slice(0, 64);
  }
}
