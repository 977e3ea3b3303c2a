/** Web Push: the VAPID key, this user's devices, test pushes, and the service worker's "seen". */
import { Hono } from "hono";
import { z } from "zod";
import { requireSameOrigin, requireWeb } from "../auth";
import { listDevices, touchDevice } from "../db";
import { DomainError } from "../errors";
import { validate } from "../http";
import { hubFor } from "../hub/api";
import { pushSubscriptionSchema } from "../hub/web-push";
import { addDevice, removeDevice } from "../team/devices";
import type { AppEnv } from "../types";

const deviceBody = z.object({
  name: z.string().trim().min(1).max(64),
  subscription: pushSubscriptionSchema,
});
const deviceParam = z.object({ id: z.string().regex(/^dev_[0-9A-Za-z]{22}$/, "not a device id") });
const seenBody = z.object({ deviceId: z.string().regex(/^dev_[0-9A-Za-z]{22}$/, "not a device id") });

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
    const devices = await listDevices(c.env.DB, w.teamId, w.userId);
    return c.json({
      devices: devices.map(({ id, name, createdAt, lastSeenAt }) => ({ id, name, createdAt, lastSeenAt })),
    });
  })
  .delete("/v1/devices/:id", validate("param", deviceParam), async (c) => {
    const w = c.get("web");
    await removeDevice(c.env, { teamId: w.teamId, userId: w.userId, deviceId: c.req.valid("param").id });
    return c.json({ ok: true });
  })
  .post("/v1/devices/:id/test", validate("param", deviceParam), async (c) => {
    const w = c.get("web");
    const sent = await hubFor(c.env, w.teamId).sendTest(w.teamId, c.req.valid("param").id, w.userId);
    if (!sent) throw new DomainError("not_found", "no such device");
    return c.json({ ok: true }, 202);
  })
  .post("/v1/approvals/:id/seen", requireWeb, requireSameOrigin, validate("json", seenBody), async (c) => {
    const w = c.get("web");
    const { deviceId } = c.req.valid("json");
    const seen = await hubFor(c.env, w.teamId).markSeen(c.req.param("id"), deviceId, w.userId);
    if (!seen) throw new DomainError("not_found", "no push of that approval to that device");
    c.executionCtx.waitUntil(touchDevice(c.env.DB, w.teamId, w.userId, deviceId, Date.now()));
    return c.body(null, 204);
  });
