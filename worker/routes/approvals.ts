/** The human side of approvals: list, read, decide (see team/approvals.ts). */
import type { AuthenticationResponseJSON } from "@simplewebauthn/server";
import { Hono } from "hono";
import { anyDecisionBodySchema, approvalListQuerySchema } from "../../sdk/src/human/approvals";
import { requireFreshWeb, requireRole, requireSameOrigin, requireWeb } from "../auth";
import { listApprovals } from "../db";
import { cursorParam, nextCursor, relyingParty, validate } from "../http";
import { DECIDER_ROLES } from "../roles";
import { decideApproval, readApproval } from "../team/approvals";
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
  .post(
    "/v1/approvals/:id/decision",
    // The role as D1 has it now, not as cached: a member removed or demoted a moment ago decides nothing.
    requireFreshWeb,
    requireRole(...DECIDER_ROLES),
    validate("json", anyDecisionBodySchema),
    async (c) => {
      const w = c.get("web");
      // `optionId` for a permission, `action` (and `content`) for an elicitation; the gate checks which fits.
      const { requestHash, ...answer } = c.req.valid("json");
      const { stepUp, ...decision } = "stepUp" in answer ? answer : { ...answer, stepUp: undefined };
      const approval = await decideApproval(c.env, {
        approvalId: c.req.param("id"),
        teamId: w.teamId,
        userId: w.userId,
        name: w.name,
        role: w.role,
        device: deviceName(c.req.header("X-Tapgate-Device")),
        ...decision,
        requestHash,
        ...(stepUp && { stepUp: { assertion: stepUp as AuthenticationResponseJSON, relyingParty: relyingParty(c) } }),
      });
      return c.json(approval, 200);
    },
  );

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
