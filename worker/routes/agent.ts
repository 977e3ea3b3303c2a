/** The agent's WebSocket: authenticate the key, register the session, hand the socket to its gate. */
import { Hono, type MiddlewareHandler } from "hono";
import { z } from "zod";
import { sessionIdSchema } from "../../sdk/src/protocol";
import { requireAgentKey } from "../auth";
import { getTeamPolicy, joinAgentSession, touchApiKey } from "../db";
import { apiError, validate } from "../http";
import { joinRequest } from "../session-gate";
import type { AppEnv } from "../types";

const requireUpgrade: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.header("Upgrade")?.toLowerCase() === "websocket") return next();
  return apiError(c, 426, "upgrade_required", "open this URL as a WebSocket");
};

export const agentRoutes = new Hono<AppEnv>().get(
  "/v1/agent/sessions/:sessionId",
  requireUpgrade,
  validate("param", z.object({ sessionId: sessionIdSchema })),
  requireAgentKey,
  async (c) => {
    const agent = c.get("agent");
    const { sessionId } = c.req.valid("param");
    const now = Date.now();
    const [joined, policy] = await Promise.all([
      joinAgentSession(c.env.DB, { ...agent, sessionId, now }),
      getTeamPolicy(c.env.DB, agent.teamId),
    ]);
    if (joined === "forbidden") {
      return apiError(c, 403, "forbidden", "this session belongs to another user; use a new session id");
    }
    c.executionCtx.waitUntil(touchApiKey(c.env.DB, agent.keyId, now));
    const gate = c.env.SESSION_GATE.get(c.env.SESSION_GATE.idFromName(`${agent.teamId}/${sessionId}`));
    return gate.fetch(joinRequest(c.req.raw, { ...agent, sessionId, ownerUserId: agent.userId, policy }));
  },
);
