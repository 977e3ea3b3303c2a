/**
 * A person's signed-in browsers (rules in team/web-sessions.ts): list them, sign one out, or
 * sign out everywhere else. Sessions are named by their public id, never by token.
 */

import { Hono } from "hono";
import { deleteCookie } from "hono/cookie";
import { webSessionParamSchema } from "../../sdk/src/human/auth";
import { emptyBodySchema } from "../../sdk/src/human/common";
import { requireRecentSignIn, requireSameOrigin, requireWeb, SESSION_COOKIE } from "../auth";
import { validate } from "../http";
import { endMyOtherSessions, endMySession, mySessions } from "../team/web-sessions";
import type { AppEnv } from "../types";

export const webSessionRoutes = new Hono<AppEnv>()
  .use("/v1/auth/sessions", requireWeb)
  .use("/v1/auth/sessions/*", requireWeb, requireSameOrigin)
  .get("/v1/auth/sessions", async (c) => c.json({ sessions: await mySessions(c.env, c.get("web")) }))
  // Read fresh, and only within 10 minutes of a sign-in: a stolen cookie cannot lock the owner out.
  .post("/v1/auth/sessions/end-others", requireRecentSignIn, validate("json", emptyBodySchema), async (c) =>
    c.json({ ok: true, ended: await endMyOtherSessions(c.env, c.get("web")) }),
  )
  .delete("/v1/auth/sessions/:id", validate("param", webSessionParamSchema), async (c) => {
    const { id } = c.req.valid("param");
    await endMySession(c.env, c.get("web"), id);
    // Ending this browser's own session is signing out.
    if (id === c.get("web").sessionId) deleteCookie(c, SESSION_COOKIE, { path: "/", secure: true });
    return c.json({ ok: true, id });
  });
