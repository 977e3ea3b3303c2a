/**
 * The live feed: a browser's WebSocket to its team's TeamHub, cookie-authenticated (against D1,
 * not the cache: a removed member or an ended session gets no feed), Origin-checked.
 */
import { Hono } from "hono";
import { requireFreshWeb } from "../auth";
import { REQUEST_BUDGET_MS, withDeadline } from "../deadline";
import { DomainError } from "../errors";
import { appOrigin, requireUpgrade } from "../http";
import { hubFor } from "../hub/api";
import { hubJoinRequest } from "../hub/live-feed";
import type { AppEnv } from "../types";

export const liveRoutes = new Hono<AppEnv>().get("/v1/live", requireFreshWeb, requireUpgrade, async (c) => {
  // Browsers send Origin on WebSocket upgrades; another site's page must not ride our cookie.
  if (c.req.header("Origin") !== appOrigin(c)) throw new DomainError("bad_origin", "WebSocket from another origin");
  const w = c.get("web");
  const join = hubJoinRequest(c.req.raw, {
    teamId: w.teamId,
    userId: w.userId,
    tokenHash: w.tokenHash,
    validUntil: w.validUntil,
  });
  // A hub that accepts after the budget keeps a socket nobody holds, until its own checks close it
  // (the web session's expiry, or the next event to a socket gone).
  return withDeadline(hubFor(c.env, w.teamId).fetch(join), REQUEST_BUDGET_MS, "hub.live");
});
