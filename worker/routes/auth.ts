/** Sign-up, sign-in by one-time email link, sign-out, and who am I. */
import { Hono } from "hono";
import {
  devOutboxQuerySchema,
  type LinkPreview,
  linkBodySchema,
  linkPreviewBodySchema,
  type Me,
  signinBodySchema,
  signupBodySchema,
} from "../../sdk/src/human/auth";
import { endWebSession, requireSameOrigin, requireWeb } from "../auth";
import { listDevMessages } from "../db";
import { isLocalRequest } from "../edge";
import { DomainError } from "../errors";
import { validate } from "../http";
import { confirmLink, previewLink, signInByMail, signUpByMail } from "../team/signup";
import type { AppEnv } from "../types";

export const authRoutes = new Hono<AppEnv>()
  .post("/v1/auth/signup", requireSameOrigin, validate("json", signupBodySchema), async (c) =>
    signUpByMail(c, c.req.valid("json"), null),
  )
  .post("/v1/auth/signin", requireSameOrigin, validate("json", signinBodySchema), async (c) =>
    signInByMail(c, c.req.valid("json").email),
  )
  // The token in the body, never the URL: request URLs are what logs keep.
  .post("/v1/auth/link/preview", validate("json", linkPreviewBodySchema), async (c) =>
    c.json((await previewLink(c.env, c.req.valid("json").token)) satisfies LinkPreview),
  )
  .post("/v1/auth/link", requireSameOrigin, validate("json", linkBodySchema), async (c) => {
    await confirmLink(c, c.req.valid("json"));
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
    } satisfies Me);
  })
  .get("/v1/dev/outbox", validate("query", devOutboxQuerySchema), async (c) => {
    // Sign-in links for anyone who asks: only ever to this machine (a tunnel must not expose them).
    if (!isLocalRequest(c)) throw new DomainError("not_found", "no such route");
    return c.json({ messages: await listDevMessages(c.env.DB, c.req.valid("query").to) });
  });
