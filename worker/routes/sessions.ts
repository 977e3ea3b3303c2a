/** Agent sessions of the team: connected or recent, and one session with its requests in order. */
import { Hono } from "hono";
import {
  type SessionDetail,
  sessionListQuerySchema,
  sessionPageQuerySchema,
  sessionParamSchema,
} from "../../sdk/src/human/sessions";
import { requireWeb } from "../auth";
import { getSession, listSessionApprovals, listSessions } from "../db";
import { DomainError } from "../errors";
import { cursorParam, nextCursor, validate } from "../http";
import { SESSION_LIVE_MS } from "../hub/api";
import type { AppEnv } from "../types";

const pageQuery = sessionPageQuerySchema.extend({ cursor: cursorParam.optional() });

export const sessionRoutes = new Hono<AppEnv>()
  .use("/v1/sessions", requireWeb)
  .use("/v1/sessions/*", requireWeb)
  .get("/v1/sessions", validate("query", sessionListQuerySchema), async (c) => {
    const { state, limit } = c.req.valid("query");
    const liveSince = Date.now() - SESSION_LIVE_MS;
    return c.json({ sessions: await listSessions(c.env.DB, { teamId: c.get("web").teamId, state, limit, liveSince }) });
  })
  .get("/v1/sessions/:sessionId", validate("param", sessionParamSchema), validate("query", pageQuery), async (c) => {
    const teamId = c.get("web").teamId;
    const { sessionId } = c.req.valid("param");
    const session = await getSession(c.env.DB, teamId, sessionId);
    if (!session) throw new DomainError("not_found", "no such session");
    const { cursor, limit } = c.req.valid("query");
    const approvals = await listSessionApprovals(c.env.DB, { teamId, sessionId, cursor: cursor ?? null, limit });
    return c.json({ ...session, approvals, cursor: nextCursor(approvals, limit) } satisfies SessionDetail);
  });
