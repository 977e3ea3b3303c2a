/**
 * Agent sessions of the team: connected or recent, and one session with its requests in order;
 * an admin replays a session's dead letters; a decider stops a session, its owner or an admin
 * resumes it (team/sessions.ts).
 */
import { Hono } from "hono";
import {
  type ReplayAnswer,
  type SessionDetail,
  type SessionList,
  type StopAnswer,
  sessionListQuerySchema,
  sessionPageQuerySchema,
  sessionParamSchema,
  stopBodySchema,
} from "../../sdk/src/human/sessions";
import { requireCurrentWeb, requireRole, requireSameOrigin, requireWeb } from "../auth";
import { listSessionApprovals } from "../db";
import { DomainError } from "../errors";
import { cursorParam, deviceOf, nextCursor, validate } from "../http";
import { ADMIN_ROLES, DECIDER_ROLES } from "../roles";
import { listTeamSessions, replayDeadLetters, resumeSession, stopSession, teamSession } from "../team/sessions";
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
  )
  // Stopping only ever denies, so everyone who may decide may stop; the role as it is now.
  .post(
    "/v1/sessions/:sessionId/stop",
    requireSameOrigin,
    requireCurrentWeb,
    requireRole(...DECIDER_ROLES),
    validate("param", sessionParamSchema),
    validate("json", stopBodySchema),
    async (c) => {
      const w = c.get("web");
      const { reason } = c.req.valid("json");
      const input = { by: { userId: w.userId, name: w.name }, device: deviceOf(c), ...(reason && { reason }) };
      return c.json((await stopSession(c.env, w.teamId, c.req.valid("param").sessionId, input)) satisfies StopAnswer);
    },
  )
  .post(
    "/v1/sessions/:sessionId/resume",
    requireSameOrigin,
    requireCurrentWeb,
    validate("param", sessionParamSchema),
    async (c) =>
      c.json((await resumeSession(c.env, c.get("web"), c.req.valid("param").sessionId)) satisfies StopAnswer),
  );
