/**
 * Signed webhooks (`/v1/webhooks`, see team/webhooks.ts): make one (the secret answered once),
 * list them with their recent deliveries, rotate a secret, delete one. Owners and admins only
 * (`403` for others, by the role D1 has now); another team's ids are `404`.
 */
import { Hono } from "hono";
import { createWebhookBodySchema, webhookParamSchema } from "../../sdk/src/human/webhooks";
import { requireFreshWeb, requireRole, requireSameOrigin, requireWeb } from "../auth";
import { isLocalRequest } from "../edge";
import { validate } from "../http";
import { ADMIN_ROLES } from "../roles";
import { createWebhook, listTeamWebhooks, removeWebhook, rotateWebhookSecret } from "../team/webhooks";
import type { AppEnv } from "../types";

export const webhookRoutes = new Hono<AppEnv>()
  .use("/v1/webhooks", requireWeb, requireSameOrigin, requireFreshWeb, requireRole(...ADMIN_ROLES))
  .use("/v1/webhooks/*", requireWeb, requireSameOrigin, requireFreshWeb, requireRole(...ADMIN_ROLES))
  .post("/v1/webhooks", validate("json", createWebhookBodySchema), async (c) =>
    c.json(await createWebhook(c.env, { ...c.get("web"), local: isLocalRequest(c) }, c.req.valid("json")), 201),
  )
  .get("/v1/webhooks", async (c) => c.json({ webhooks: await listTeamWebhooks(c.env, c.get("web").teamId) }))
  .delete("/v1/webhooks/:id", validate("param", webhookParamSchema), async (c) =>
    c.json(await removeWebhook(c.env, { ...c.get("web"), local: false }, c.req.valid("param").id)),
  )
  .post("/v1/webhooks/:id/rotate", validate("param", webhookParamSchema), async (c) =>
    c.json(await rotateWebhookSecret(c.env, { ...c.get("web"), local: false }, c.req.valid("param").id)),
  );
