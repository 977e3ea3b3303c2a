/**
 * Slack's HTTP edge (docs/human-api.md "Slack"): "Add to Slack" and its OAuth callback (owners and
 * admins), the team channel cards go to, and the two URLs Slack itself calls, Events and
 * Interactivity, accepted only with a valid `X-Slack-Signature` (else `401 bad_signature`). Every
 * route answers `404` while the deployment has no Slack settings.
 *
 * Owns: authentication, validation and answers. Does not own: the install, the link, the decision
 * (`worker/channels/slack/`), linking codes and removal (`worker/routes/channels.ts`).
 */
import { type Context, Hono, type MiddlewareHandler } from "hono";
import { ADMIN_ROLES } from "../../sdk/src/human/roles";
import {
  slackBlockActionsSchema,
  slackEventEnvelopeSchema,
  slackOAuthCallbackSchema,
  slackTargetBodySchema,
} from "../../sdk/src/human/slack";
import { parseJson } from "../../sdk/src/protocol";
import { requireFreshWeb, requireRole, requireSameOrigin } from "../auth";
import { ChannelFailure } from "../channels/channel";
import { requireChannel } from "../channels/settings";
import { slackAppRemoved, slackDirectMessage, slackTap, tellTapper } from "../channels/slack/inbound";
import { completeSlackInstall, SLACK_CALLBACK_PATH, slackInstallUrl, slackStateValid } from "../channels/slack/oauth";
import { slackSignatureValid } from "../channels/slack/signature";
import { getChannelInstall, putChannelInstall } from "../db/channels";
import { orFallback, REQUEST_BUDGET_MS } from "../deadline";
import { DomainError } from "../errors";
import { appOrigin, validate } from "../http";
import { appendAudit } from "../team/audit";
import { auditEvents, userActor } from "../team/audit-events";
import type { AppEnv } from "../types";

/** Where the installer lands back in the app, with how it went. */
const CHANNELS_SCREEN = "/channels";

const slackConfigured: MiddlewareHandler<AppEnv> = async (c, next) => {
  requireChannel(c.env, "slack");
  return next();
};

/** Slack's v0 signature over the raw body, before anything in it is read. */
const requireSlackSignature: MiddlewareHandler<AppEnv> = async (c, next) => {
  const signed = slackSignatureValid(
    c.env.SLACK_SIGNING_SECRET ?? "",
    {
      timestamp: c.req.header("X-Slack-Request-Timestamp"),
      signature: c.req.header("X-Slack-Signature"),
      body: new Uint8Array(await c.req.arrayBuffer()),
    },
    Date.now(),
  );
  if (!signed) throw new DomainError("bad_signature");
  return next();
};

const backToApp = (c: Context<AppEnv>, outcome: "installed" | "cancelled" | "failed") =>
  c.redirect(`${appOrigin(c)}${CHANNELS_SCREEN}?slack=${outcome}`, 302);

export const slackRoutes = new Hono<AppEnv>()
  .use("/v1/channels/slack/*", slackConfigured)
  .get("/v1/channels/slack/install", requireFreshWeb, requireRole(...ADMIN_ROLES), (c) => {
    const w = c.get("web");
    return c.redirect(slackInstallUrl(c.env, appOrigin(c), { teamId: w.teamId, userId: w.userId }, Date.now()), 302);
  })
  .get(
    SLACK_CALLBACK_PATH,
    requireFreshWeb,
    requireRole(...ADMIN_ROLES),
    validate("query", slackOAuthCallbackSchema),
    async (c) => {
      const w = c.get("web");
      const { code, state, error } = c.req.valid("query");
      const installer = { teamId: w.teamId, userId: w.userId };
      if (!state || !slackStateValid(c.env, state, installer, Date.now())) throw new DomainError("invalid_oauth_state");
      if (error || !code) return backToApp(c, "cancelled");
      try {
        await completeSlackInstall(c.env, installer, code, appOrigin(c), Date.now());
      } catch (err) {
        if (err instanceof ChannelFailure) return backToApp(c, "failed");
        throw err;
      }
      return backToApp(c, "installed");
    },
  )
  .put(
    "/v1/channels/slack/target",
    requireFreshWeb,
    requireSameOrigin,
    requireRole(...ADMIN_ROLES),
    validate("json", slackTargetBodySchema),
    async (c) => {
      const w = c.get("web");
      const install = await getChannelInstall(c.env.DB, w.teamId, "slack");
      if (!install) throw new DomainError("not_found", "Slack is not added to this team");
      const { channelId } = c.req.valid("json");
      await putChannelInstall(c.env.DB, { ...install, target: channelId });
      const context = { teamId: w.teamId, actor: userActor(w.userId), at: Date.now() };
      await appendAudit(c.env, auditEvents.channelTargetChanged(context, { channel: "slack", target: channelId }));
      return c.json({ channelId });
    },
  )
  .post("/v1/channels/slack/events", requireSlackSignature, async (c) => {
    const envelope = slackEventEnvelopeSchema.safeParse(parseJson(await c.req.text()));
    if (!envelope.success) throw new DomainError("invalid_request", "not an Events API request Tapgate reads");
    if (envelope.data.type === "url_verification") return c.json({ challenge: envelope.data.challenge });
    // A redelivery of an event already answered (or too slowly): a link code is one-time anyway.
    if (await slackAppRemoved(c.env, envelope.data.team_id, envelope.data.event)) return c.body(null, 200);
    if (c.req.header("X-Slack-Retry-Num")) return c.body(null, 200);
    await orFallback(
      slackDirectMessage(c.env, envelope.data.team_id, envelope.data.event),
      REQUEST_BUDGET_MS,
      "slack direct message",
      undefined,
    );
    return c.body(null, 200);
  })
  .post("/v1/channels/slack/interactions", requireSlackSignature, async (c) => {
    const form = new URLSearchParams(await c.req.text());
    const payload = slackBlockActionsSchema.safeParse(parseJson(form.get("payload") ?? ""));
    // Only buttons are Tapgate's; anything else Slack may send is acknowledged and left alone.
    if (!payload.success) return c.body(null, 200);
    const tap = await slackTap(c.env, payload.data);
    if (tap) c.executionCtx.waitUntil(tellTapper(c.env, tap.install, payload.data, tap.text).catch(() => undefined));
    return c.body(null, 200);
  });
