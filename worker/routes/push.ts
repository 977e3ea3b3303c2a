/** Web Push: the VAPID key, this user's devices (with their health and shown ÷ sent, and the team's per platform), test pushes, and the service worker's receipts. */
import { Hono } from "hono";
import { receiptBodySchema, seenBodySchema } from "../../sdk/src/human/approvals";
import {
  type DeviceHealth,
  type DeviceList,
  type DisplayFigures,
  deviceBodySchema,
  deviceParamSchema,
} from "../../sdk/src/human/push";
import { requireSameOrigin, requireWeb } from "../auth";
import { listDevices, touchDevice } from "../db";
import { orFallback, REQUEST_BUDGET_MS, withDeadline } from "../deadline";
import { DomainError } from "../errors";
import { validate } from "../http";
import { type DisplayReport, hubFor } from "../hub/api";
import { pushSubscriptionSchema } from "../hub/web-push";
import { addDevice, removeDevice } from "../team/devices";
import type { AppEnv } from "../types";

/** A device with no push sent in the 7 days. */
const NOTHING_SENT: DisplayFigures = { sent7d: 0, displayed7d: 0, displayedRatio: null };

/** The contract's body, with the Worker's own checks of the subscription (push host, key points). */
const deviceBody = deviceBodySchema.extend({ subscription: pushSubscriptionSchema });

export const pushRoutes = new Hono<AppEnv>()
  .get("/v1/push/key", (c) => {
    if (!c.env.VAPID_PUBLIC_KEY) throw new DomainError("push_unavailable", "Web Push is not configured on this server");
    return c.json({ publicKey: c.env.VAPID_PUBLIC_KEY });
  })
  .use("/v1/devices", requireWeb, requireSameOrigin)
  .use("/v1/devices/*", requireWeb, requireSameOrigin)
  .post("/v1/devices", validate("json", deviceBody), async (c) => {
    const w = c.get("web");
    const device = await addDevice(c.env, {
      ...c.req.valid("json"),
      teamId: w.teamId,
      userId: w.userId,
      userAgent: c.req.header("User-Agent")?.slice(0, 200) ?? "",
    });
    return c.json({ id: device.id, name: device.name, createdAt: device.createdAt }, 201);
  })
  .get("/v1/devices", async (c) => {
    const w = c.get("web");
    const hub = hubFor(c.env, w.teamId);
    // The hub's view of recent pushes; without it the list still answers (health and figures unknown).
    const [devices, health, shown] = await Promise.all([
      listDevices(c.env.DB, w.teamId, w.userId),
      orFallback<Record<string, DeviceHealth>>(hub.deviceHealth(w.userId), REQUEST_BUDGET_MS, "hub.deviceHealth", {}),
      orFallback<DisplayReport>(hub.displayReport(w.userId), REQUEST_BUDGET_MS, "hub.displayReport", {
        devices: {},
        platforms: [],
      }),
    ]);
    const answer: DeviceList = {
      devices: devices.map(({ id, name, createdAt, lastSeenAt }) => ({
        id,
        name,
        createdAt,
        lastSeenAt,
        health: health[id] ?? "ok",
        ...(shown.devices[id] ?? NOTHING_SENT),
      })),
      platforms: shown.platforms,
    };
    return c.json(answer);
  })
  .delete("/v1/devices/:id", validate("param", deviceParamSchema), async (c) => {
    const w = c.get("web");
    await removeDevice(c.env, { teamId: w.teamId, userId: w.userId, deviceId: c.req.valid("param").id });
    return c.json({ ok: true });
  })
  .post("/v1/devices/:id/test", validate("param", deviceParamSchema), async (c) => {
    const w = c.get("web");
    const hub = hubFor(c.env, w.teamId);
    const sent = await withDeadline(
      hub.sendTest(w.teamId, c.req.valid("param").id, w.userId),
      REQUEST_BUDGET_MS,
      "hub.sendTest",
    );
    if (!sent) throw new DomainError("not_found", "no such device");
    return c.json({ ok: true }, 202);
  })
  .post("/v1/approvals/:id/seen", requireWeb, requireSameOrigin, validate("json", seenBodySchema), async (c) => {
    const w = c.get("web");
    const { deviceId } = c.req.valid("json");
    const seen = await withDeadline(
      hubFor(c.env, w.teamId).markSeen(c.req.param("id"), deviceId, w.userId),
      REQUEST_BUDGET_MS,
      "hub.markSeen",
    );
    if (!seen) throw new DomainError("not_found", "no push of that approval to that device");
    c.executionCtx.waitUntil(touchDevice(c.env.DB, w.teamId, w.userId, deviceId, Date.now()));
    return c.body(null, 204);
  })
  .post("/v1/approvals/:id/receipt", requireWeb, requireSameOrigin, validate("json", receiptBodySchema), async (c) => {
    const w = c.get("web");
    const { deviceId, event } = c.req.valid("json");
    const hub = hubFor(c.env, w.teamId);
    // Past the budget: 503, and the service worker's next receipt (or a repeat: idempotent) tells it.
    const marked = await withDeadline(
      hub.markReceipt(c.req.param("id"), deviceId, w.userId, event),
      REQUEST_BUDGET_MS,
      "hub.markReceipt",
    );
    if (!marked) throw new DomainError("not_found", "no push of that approval to that device");
    c.executionCtx.waitUntil(touchDevice(c.env.DB, w.teamId, w.userId, deviceId, Date.now()));
    return c.body(null, 204);
  });
