/**
 * Standing rules: make one, list them (active and ended in the last 7 days), end one (see
 * team/rules.ts). Viewers and agent keys make none (`403`); another team's rule ids are `404`.
 */
import { Hono } from "hono";
import { createRuleBodySchema, ruleParamSchema } from "../../sdk/src/human/rules";
import { requireFreshWeb, requireSameOrigin, requireWeb } from "../auth";
import { validate } from "../http";
import { createRule, endStandingRule, listTeamRules } from "../team/rules";
import type { AppEnv } from "../types";

export const ruleRoutes = new Hono<AppEnv>()
  .use("/v1/rules", requireWeb, requireSameOrigin)
  .use("/v1/rules/*", requireWeb, requireSameOrigin, requireFreshWeb)
  .get("/v1/rules", async (c) => c.json({ rules: await listTeamRules(c.env, c.get("web").teamId) }))
  // The role as D1 has it now, not as cached: a member demoted a moment ago makes or ends no rule.
  .post("/v1/rules", requireFreshWeb, validate("json", createRuleBodySchema), async (c) => {
    const w = c.get("web");
    const body = c.req.valid("json");
    const rule = await createRule(c.env, w, {
      scope: body.scope,
      match: body.match,
      expiresInMs: body.expiresInMs,
      note: body.note ?? null,
    });
    return c.json({ rule }, 201);
  })
  .delete("/v1/rules/:id", validate("param", ruleParamSchema), async (c) => {
    return c.json({ rule: await endStandingRule(c.env, c.get("web"), c.req.valid("param").id) });
  });
