/**
 * Agent sessions of the team: connected or recent, and one session with its requests in order;
 * an admin replays a session's dead letters.
 */
import { Hono } from "hono";
import {
  type ReplayAnswer,
  type SessionDetail,
  type SessionList,
  sessionListQuerySchema,
  sessionPageQuerySchema,
  sessionParamSchema,
} from "../../sdk/src/human/sessions";
import { requireRole, requireSameOrigin, requireWeb } from "../auth";
import { listSessionApprovals } from "../db";
import { DomainError } from "../errors";
import { cursorParam, nextCursor, validate } from "../http";
import { ADMIN_ROLES } from "../roles";
import { listTeamSessions, replayDeadLetters, teamSession } from "../team/sessions";
import type { AppEnv } from "../types";

const pageQuery = sessionPageQuerySchema.extend({ cursor: cursorParam.optional() });

export const sessionRoutes = new Hono<AppEnv>()
  .use("/v1/sessions", requireWeb)
  .use("/v1/sessions/*", requireWeb)
  .get("/v1/sessions", validate("query", sessionListQuerySchema), async (c) => {
    const { state, limit } = c.req.valid("query");
    return c.json((await listTeamSessions(c.env, { teamId: c.get("web").teamId, state, limit })) satisfies SessionList);
  })
  .get("/v1/sessions/:sessionId", validate("param", sessionParamSchema), validate("query", pageQuery), async (c) => {
    const teamId = c.get("web").teamId;
    const { sessionId } = c.req.valid("param");
    const session = await teamSession(c.env, teamId, sessionId);
    if (!session) throw new DomainError("not_found", "no such session");
    const { cursor, limit } = c.req.valid("query");
    const approvals = await listSessionApprovals(c.env.DB, { teamId, sessionId, cursor: cursor ?? null, limit });
    return c.json({ ...session, approvals, cursor: nextCursor(approvals, limit) } satisfies SessionDetail);
  })
  .post(
    "/v1/sessions/:sessionId/replay",
    requireSameOrigin,
    requireRole(...ADMIN_ROLES),
    validate("param", sessionParamSchema),
    async (c) => {
      const { sessionId } = c.req.valid("param");
      const replayed = await replayDeadLetters(c.env, c.get("web").teamId, sessionId);
      if (!replayed) throw new DomainError("not_found", "no such session");
      return c.json(replayed satisfies ReplayAnswer);
    },
  );
