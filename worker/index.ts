/**
 * The Tapgate Worker: the human API (cookie sessions), the agent WebSocket (API keys), the
 * Durable Objects behind them, and the scheduled history pruning. Routes live in routes/, one
 * file per resource.
 */
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { DeadlineExceeded } from "./deadline";
import { pinHost, securityHeaders } from "./edge";
import { DomainError } from "./errors";
import { apiError, internalErrorMessage, limitBody } from "./http";
import { agentRoutes } from "./routes/agent";
import { approvalRoutes } from "./routes/approvals";
import { auditRoutes } from "./routes/audit";
import { authRoutes } from "./routes/auth";
import { channelRoutes } from "./routes/channels";
import { deviceRoutes } from "./routes/device";
import { deviceKeyRoutes } from "./routes/device-keys";
import { historyRoutes } from "./routes/history";
import { CLAUDE_HOOK_PATH, hookFailure, hookRoutes } from "./routes/hooks";
import { keyRoutes } from "./routes/keys";
import { liveRoutes } from "./routes/live";
import { MCP_PATH, mcpRoutes } from "./routes/mcp";
import { memberRoutes } from "./routes/members";
import { pairingRoutes } from "./routes/pairing";
import { passkeyRoutes } from "./routes/passkeys";
import { policyRoutes } from "./routes/policy";
import { pushRoutes } from "./routes/push";
import { ruleRoutes } from "./routes/rules";
import { sessionRoutes } from "./routes/sessions";
import { slackRoutes } from "./routes/slack";
import { stepUpRoutes } from "./routes/step-up";
import { teamRoutes } from "./routes/teams";
import { telegramRoutes } from "./routes/telegram";
import { webSessionRoutes } from "./routes/web-sessions";
import { webhookRoutes } from "./routes/webhooks";
import { pruneHistory } from "./team/retention";
import { sweepWebhooks } from "./team/webhooks";
import type { AppEnv, Env } from "./types";

export { SessionGate } from "./gate/session-gate";
export { TeamHub } from "./hub/team-hub";

/** Human API bodies are small; only an agent's permission request may be as large as a frame. */
const HUMAN_BODY_BYTES = 64 * 1024;
const AGENT_PERMISSIONS = /^\/v1\/agent\/sessions\/[^/]+\/permissions$/;
const limitHumanBodies = limitBody(HUMAN_BODY_BYTES);

const app = new Hono<AppEnv>()
  .use("*", securityHeaders, pinHost)
  // The Claude hook endpoint reads its body itself, after the key (≤ 64 KiB): a 413 would let Claude carry on.
  .use("/v1/*", (c, next) =>
    AGENT_PERMISSIONS.test(c.req.path) || c.req.path === CLAUDE_HOOK_PATH || c.req.path === MCP_PATH
      ? next()
      : limitHumanBodies(c, next),
  )
  .route("/", authRoutes)
  .route("/", passkeyRoutes)
  .route("/", webSessionRoutes)
  .route("/", pairingRoutes)
  .route("/", keyRoutes)
  .route("/", approvalRoutes)
  .route("/", stepUpRoutes)
  .route("/", agentRoutes)
  .route("/", hookRoutes)
  .route("/", mcpRoutes)
  .route("/", deviceKeyRoutes) // before pushRoutes: `/v1/devices/keys` is not a device id
  .route("/", pushRoutes)
  .route("/", liveRoutes)
  .route("/", deviceRoutes)
  .route("/", teamRoutes)
  .route("/", memberRoutes)
  .route("/", policyRoutes)
  .route("/", channelRoutes)
  .route("/", slackRoutes)
  .route("/", telegramRoutes)
  .route("/", ruleRoutes)
  .route("/", sessionRoutes)
  .route("/", historyRoutes)
  .route("/", auditRoutes)
  .route("/", webhookRoutes)
  .get("/v1/health", (c) => c.json({ ok: true }))
  .notFound((c) => apiError(c, "not_found", "no such route"))
  .onError((err, c) => {
    // Claude Code takes any non-2xx as "no decision": the hook's failures (a 421 host too) are 200 denies.
    if (c.req.path === CLAUDE_HOOK_PATH) return hookFailure(c, err);
    if (err instanceof DomainError) {
      for (const [name, value] of Object.entries(err.headers ?? {})) c.header(name, value);
      return apiError(c, err.code, err.message || undefined, err.extra);
    }
    if (err instanceof HTTPException) return apiError(c, "bad_request", err.message);
    if (err instanceof DeadlineExceeded) {
      // A wait across objects ran out (deadline.ts) and its call site has no other fallback.
      c.header("Retry-After", "1");
      return apiError(c, "service_unavailable", `${err.what} did not answer in time; try again`);
    }
    console.error("unhandled error", err instanceof Error ? err.name : "unknown");
    return apiError(c, "internal_error", internalErrorMessage(c.req.method));
  });

/**
 * The Worker: the app for requests, and the Cron Trigger (`[triggers] crons` in wrangler.toml)
 * that prunes history past each team's retention. `request` is the app's, for tests.
 */
export default {
  fetch: app.fetch,
  request: app.request,
  scheduled(controller, env, ctx) {
    ctx.waitUntil(pruneHistory(env, controller.scheduledTime));
    ctx.waitUntil(sweepWebhooks(env, controller.scheduledTime));
  },
} satisfies ExportedHandler<Env> & Pick<typeof app, "request">;
