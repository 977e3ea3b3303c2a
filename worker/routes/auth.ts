/** Sign-up, sign-in by one-time email link, sign-out, and who am I. */
import { Hono } from "hono";
import { z } from "zod";
import { endWebSession, requireSameOrigin, requireWeb } from "../auth";
import { listDevMessages } from "../db";
import { DomainError } from "../errors";
import { validate } from "../http";
import { confirmLink, emailSchema, signInByMail, signUpByMail, signupSchema } from "../team/signup";
import type { AppEnv } from "../types";

const signinBody = z.object({ email: emailSchema });
const linkBody = z.object({ token: z.string().min(20).max(100) });

export const authRoutes = new Hono<AppEnv>()
  .post("/v1/auth/signup", requireSameOrigin, validate("json", signupSchema), async (c) =>
    signUpByMail(c, c.req.valid("json"), null),
  )
  .post("/v1/auth/signin", requireSameOrigin, validate("json", signinBody), async (c) =>
    signInByMail(c, c.req.valid("json").email),
  )
  .post("/v1/auth/link", requireSameOrigin, validate("json", linkBody), async (c) => {
    await confirmLink(c, c.req.valid("json").token);
    return c.json({ ok: true });
  })
  .post("/v1/auth/signout", requireSameOrigin, requireWeb, async (c) => {
    await endWebSession(c, c.get("web"));
    return c.json({ ok: true });
  })
  .get("/v1/me", requireWeb, (c) => {
    const w = c.get("web");
    return c.json({
      user: { id: w.userId, email: w.email, name: w.name },
      team: { id: w.teamId, name: w.teamName },
      role: w.role,
    });
  })
  .get("/v1/dev/outbox", validate("query", z.object({ to: emailSchema.optional() })), async (c) => {
    if (!c.env.DEV_OUTBOX) throw new DomainError("not_found", "no such route");
    return c.json({ messages: await listDevMessages(c.env.DB, c.req.valid("query").to) });
  });
