/**
 * Outside channels as the dashboard sees them (`docs/human-api.md`, "Channels"): which are set up
 * and connected, linking the caller's account, removing an install, and connecting PagerDuty.
 * Every route of a channel this deployment has not set up answers 404, checked before anything
 * else. The platforms' own callbacks (Slack's OAuth and interactions, Telegram's webhook) are
 * their adapters' routes, beside these.
 */
import { Hono, type MiddlewareHandler } from "hono";
import { type Channel, channelSchema, pagerDutyInstallBodySchema } from "../../sdk/src/human/channels";
import { requireFreshWeb, requireRecentSignIn, requireRole, requireSameOrigin, requireWeb } from "../auth";
import { connectPagerDuty } from "../channels/pagerduty/install";
import { requireChannel } from "../channels/settings";
import { DomainError } from "../errors";
import { validate } from "../http";
import { ADMIN_ROLES, DECIDER_ROLES } from "../roles";
import { linkChannel, listChannels, removeChannel, unlinkChannel } from "../team/channels";
import type { AppEnv } from "../types";

/** The path's channel: an unknown one, or one not set up here, is 404 like an unknown path. */
function channelOf(name: string | undefined): Channel {
  const parsed = channelSchema.safeParse(name);
  if (!parsed.success) throw new DomainError("not_found", "no such channel");
  return parsed.data;
}

const setUpChannel: MiddlewareHandler<AppEnv> = async (c, next) => {
  requireChannel(c.env, channelOf(c.req.param("channel")));
  return next();
};

const who = (c: { get(key: "web"): { teamId: string; userId: string } }) => {
  const w = c.get("web");
  return { teamId: w.teamId, userId: w.userId };
};

export const channelRoutes = new Hono<AppEnv>()
  .use("/v1/channels/:channel", setUpChannel)
  .use("/v1/channels/:channel/*", setUpChannel)
  .get("/v1/channels", requireWeb, async (c) => c.json({ channels: await listChannels(c.env, who(c)) }))
  // The role as D1 has it now: a demoted admin connects and removes nothing.
  .put(
    "/v1/channels/pagerduty",
    requireWeb,
    requireSameOrigin,
    requireFreshWeb,
    requireRole(...ADMIN_ROLES),
    validate("json", pagerDutyInstallBodySchema),
    async (c) => {
      await connectPagerDuty(c.env, who(c), c.req.valid("json").routingKey);
      return c.json(
        (await listChannels(c.env, who(c))).find((s) => s.channel === "pagerduty"),
        200,
      );
    },
  )
  .delete(
    "/v1/channels/:channel",
    requireWeb,
    requireSameOrigin,
    requireFreshWeb,
    requireRole(...ADMIN_ROLES),
    async (c) => {
      await removeChannel(c.env, who(c), channelOf(c.req.param("channel")));
      return c.json({ ok: true });
    },
  )
  .post(
    "/v1/channels/:channel/link",
    requireWeb,
    requireSameOrigin,
    // A linked chat decides like a device: linking one needs a recent sign-in, as pairing does.
    requireRecentSignIn,
    requireRole(...DECIDER_ROLES),
    async (c) => c.json(await linkChannel(c.env, who(c), channelOf(c.req.param("channel"))), 201),
  )
  .delete("/v1/channels/:channel/link", requireWeb, requireSameOrigin, async (c) => {
    await unlinkChannel(c.env, who(c), channelOf(c.req.param("channel")));
    return c.json({ ok: true });
  });
