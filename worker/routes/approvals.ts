/** The human side of approvals: list, read, decide. Decisions go straight to the SessionGate. */
import { Hono } from "hono";
import { z } from "zod";
import { requireRole, requireSameOrigin, requireWeb } from "../auth";
import { getApprovalRecord, listApprovals } from "../db";
import { DomainError } from "../errors";
import { type DecisionResult, gateFor } from "../gate/api";
import { cursorParam, nextCursor, validate } from "../http";
import { hubFor } from "../hub/api";
import { DECIDER_ROLES } from "../roles";
import type { AppEnv } from "../types";

const listQuery = z.object({
  state: z.enum(["pending", "resolved"]).default("pending"),
  scope: z.enum(["mine", "team"]).default("team"),
  cursor: cursorParam.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
const decisionBody = z.object({
  optionId: z.string().min(1).max(128),
  requestHash: z
    .string()
    .regex(/^[0-9a-f]{64}$/, "requestHash must be the 64-character hex SHA-256 shown with the approval"),
});

const notFound = () => new DomainError("not_found", "no such approval");

/** The SessionGate an approval id names (404 for ids that cannot be ours). */
function gateOf(env: AppEnv["Bindings"], approvalId: string) {
  const gate = gateFor(env, approvalId);
  if (!gate) throw notFound();
  return gate;
}

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
  .get("/v1/approvals/:id", async (c) => {
    const w = c.get("web");
    const id = c.req.param("id");
    const gate = gateOf(c.env, id);
    const [held, delivery] = await Promise.all([
      gate.getApproval(w.teamId, id),
      hubFor(c.env, w.teamId).deliveries(id),
    ]);
    const approval = held ?? (await getApprovalRecord(c.env.DB, w.teamId, id));
    if (!approval) throw notFound();
    return c.json({ ...approval, delivery });
  })
  .post("/v1/approvals/:id/decision", requireRole(...DECIDER_ROLES), validate("json", decisionBody), async (c) => {
    const w = c.get("web");
    const id = c.req.param("id");
    const gate = gateOf(c.env, id);
    const { optionId, requestHash } = c.req.valid("json");
    const device = deviceName(c.req.header("X-Tapgate-Device"));
    // RPC stub types reject `unknown` JSON fields as unserialisable; the values are plain JSON.
    const result = (await gate.decide({
      approvalId: id,
      teamId: w.teamId,
      userId: w.userId,
      name: w.name,
      role: w.role,
      device,
      optionId,
      requestHash,
    })) as unknown as DecisionResult;
    if (result.ok) return c.json(result.approval, 200);
    switch (result.error) {
      case "not_found":
        throw notFound();
      case "option_not_offered":
        throw new DomainError(result.error, `option ${JSON.stringify(optionId)} was not offered`);
      case "not_session_owner":
      case "role_may_not_decide":
        throw new DomainError(result.error);
      case "request_changed":
        throw new DomainError(result.error, undefined, { extra: { approval: result.approval } });
      case "already_decided":
        throw new DomainError(result.error, "someone already decided this request", {
          extra: { approval: result.approval },
        });
      case "already_resolved":
        throw new DomainError(result.error, `resolved without a human: ${result.approval.reason}`, {
          extra: { approval: result.approval },
        });
    }
  });

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
