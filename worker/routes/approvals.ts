/** The human side of approvals: list, read, decide. Decisions go straight to the SessionGate. */
import { Hono } from "hono";
import { z } from "zod";
import { requireRole, requireSameOrigin, requireWeb } from "../auth";
import { getApprovalRecord, listApprovals } from "../db";
import { DomainError } from "../errors";
import { cursorParam, nextCursor, validate } from "../http";
import { hubFor } from "../hub/api";
import { DECIDER_ROLES } from "../roles";
import { type DecisionResult, gateFor } from "../session-gate";
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
    if (result.status === 404) throw notFound();
    if (result.status === 400)
      throw new DomainError(result.error, `option ${JSON.stringify(optionId)} was not offered`);
    if (result.status === 403) {
      const why =
        result.error === "not_session_owner"
          ? "team policy lets only the session's owner decide"
          : "your role may not decide";
      throw new DomainError(result.error, why);
    }
    const extra = { approval: result.approval };
    if ("error" in result) {
      throw new DomainError(result.error, "the request differs from what you saw; reload it", { extra });
    }
    if (result.status === 409)
      throw new DomainError("already_decided", "someone already decided this request", { extra });
    if (result.status === 410) {
      throw new DomainError("already_resolved", `resolved without a human: ${result.approval.reason}`, { extra });
    }
    return c.json(result.approval, 200);
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
