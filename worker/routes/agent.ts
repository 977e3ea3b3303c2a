/**
 * The agent API (API keys only): the session WebSocket, HTTP long-poll for agents that cannot
 * hold a socket, and the key's own profile and self-revocation.
 */
import { type Context, Hono } from "hono";
import { z } from "zod";
import { type AgentAsk, createElicitationParamsSchema } from "../../sdk/src/elicitation-protocol";
import { depthExceeds } from "../../sdk/src/jsonrpc";
import { LIMITS, requestPermissionParamsSchema, sessionIdSchema } from "../../sdk/src/protocol";
import { requireAgentKey } from "../auth";
import { getAgentProfile } from "../db";
import { DomainError } from "../errors";
import { type HttpOpenResult, type HttpPollResult, MAX_WAIT_SECONDS } from "../gate/api";
import { joinRequest } from "../gate/sockets";
import { limitBody, refuseDuplicateKeys, requireUpgrade, validate } from "../http";
import { badKey, joinSession } from "../team/agent-sessions";
import { approvalGate, noSuchApproval } from "../team/approvals";
import { keyActor } from "../team/audit-events";
import { revokeKey } from "../team/keys";
import type { AppEnv } from "../types";

/** The same limit as a socket frame: the body is what a frame would carry. */
const limitFrameBody = limitBody(LIMITS.frameBytes);

const sessionParam = z.object({ sessionId: sessionIdSchema });
const permissionBody = requestPermissionParamsSchema.refine((p) => !depthExceeds(p, LIMITS.jsonDepth), {
  message: `JSON nested deeper than ${LIMITS.jsonDepth}`,
});
const elicitationBody = createElicitationParamsSchema.refine((p) => !depthExceeds(p, LIMITS.jsonDepth), {
  message: `JSON nested deeper than ${LIMITS.jsonDepth}`,
});
const waitQuery = z.object({ wait: z.coerce.number().int().min(0).max(MAX_WAIT_SECONDS).default(0) });

/** Joins the session as the calling key (see team/agent-sessions.ts). */
function join(c: Context<AppEnv>, sessionId: string) {
  return joinSession(c.env, c.get("agent"), sessionId, (work) => c.executionCtx.waitUntil(work));
}

/** A quota refusal: `429 quota_exceeded` (or `503 quota_unavailable`) with `Retry-After` in whole seconds. */
function quotaRefusal(r: Extract<HttpOpenResult, { retryAfterMs: number }>): DomainError {
  const { error, message, limit, retryAfterMs } = r;
  return new DomainError(error, message, {
    headers: { "Retry-After": String(Math.max(1, Math.ceil(retryAfterMs / 1000))) },
    extra: {
      reason: error === "quota_exceeded" ? "quota" : "quota_unavailable",
      ...(limit && { limit }),
      retryAfterMs,
    },
  });
}

/** Holds a permission request or an elicitation over HTTP: `201 {approvalId, expiresAt}`, or the refusal. */
async function openOverHttp(c: Context<AppEnv>, sessionId: string, params: AgentAsk) {
  if (params.sessionId !== sessionId) {
    const message = `sessionId in the body (${params.sessionId}) must be the one in the path (${sessionId})`;
    throw new DomainError("invalid_request", message, {
      extra: { issues: [{ code: "custom", path: ["sessionId"], message }] },
    });
  }
  const session = await join(c, sessionId);
  // RPC stub types reject `unknown` JSON fields (the issues) as unserialisable; they are plain JSON.
  const result = (await session.gate.openOverHttp(session.join, params)) as unknown as HttpOpenResult;
  if (result.ok) return c.json({ approvalId: result.approvalId, expiresAt: result.expiresAt }, 201);
  if ("retryAfterMs" in result) throw quotaRefusal(result);
  if ("stopped" in result) {
    throw new DomainError(result.error, result.message, { extra: { reason: result.error, stopped: result.stopped } });
  }
  const { error, message, issues, reason } = result;
  throw new DomainError(error, message, { extra: reason ? { reason } : issues && { issues } });
}

/** 202 while the request is pending, 200 with the final answer. */
function pollReply(c: Context, result: HttpPollResult) {
  if (!result.ok) throw noSuchApproval();
  return c.json(result.body, result.body.state === "pending" ? 202 : 200);
}

export const agentRoutes = new Hono<AppEnv>()
  .get("/v1/agent/sessions/:sessionId", requireUpgrade, validate("param", sessionParam), requireAgentKey, async (c) => {
    const session = await join(c, c.req.valid("param").sessionId);
    const answer = await session.gate.fetch(joinRequest(c.req.raw, session.join));
    // A refusal's headers come immutable from the object: copied, so the edge can add its own.
    return answer.webSocket ? answer : new Response(answer.body, answer);
  })
  .post(
    "/v1/agent/sessions/:sessionId/permissions",
    requireAgentKey,
    validate("param", sessionParam),
    limitFrameBody,
    refuseDuplicateKeys,
    validate("json", permissionBody),
    (c) => openOverHttp(c, c.req.valid("param").sessionId, c.req.valid("json")),
  )
  .post(
    "/v1/agent/sessions/:sessionId/elicitations",
    requireAgentKey,
    validate("param", sessionParam),
    limitFrameBody,
    refuseDuplicateKeys,
    validate("json", elicitationBody),
    (c) => openOverHttp(c, c.req.valid("param").sessionId, c.req.valid("json")),
  )
  .use("/v1/agent/approvals/*", requireAgentKey)
  .get("/v1/agent/approvals/:id", validate("query", waitQuery), async (c) => {
    const id = c.req.param("id");
    const gate = approvalGate(c.env, id);
    const { teamId, userId, keyId } = c.get("agent");
    const result = await gate.poll({ teamId, userId, keyId }, id, c.req.valid("query").wait * 1000);
    return pollReply(c, result as HttpPollResult);
  })
  .delete("/v1/agent/approvals/:id", async (c) => {
    const id = c.req.param("id");
    const gate = approvalGate(c.env, id);
    const { teamId, userId, keyId } = c.get("agent");
    return pollReply(c, (await gate.cancelOverHttp({ teamId, userId, keyId }, id)) as HttpPollResult);
  })
  .use("/v1/agent/me", requireAgentKey)
  .get("/v1/agent/me", async (c) => {
    const { teamId, keyId } = c.get("agent");
    const profile = await getAgentProfile(c.env.DB, teamId, keyId);
    if (!profile) throw badKey();
    return c.json(profile);
  })
  .delete("/v1/agent/me", async (c) => {
    const { teamId, userId, keyId } = c.get("agent");
    // An agent may give up its own key, and nothing else.
    const revoked = await revokeKey(c.env, { teamId, userId, keyId, actor: keyActor(keyId) });
    if (!revoked) throw badKey();
    return c.json(revoked);
  });
