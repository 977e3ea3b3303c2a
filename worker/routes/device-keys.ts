/**
 * Device keys (docs/human-api.md "Device keys"): a deciding member's browser registers its public
 * key, endorsed by their passkey; members list the team's keys and remove theirs (admins and
 * owners anyone's). And the agent's side: `GET /v1/agent/recipients`, the keys a private request
 * is sealed to (docs/agent-protocol.md). Mounted before `push.ts`, whose `/v1/devices/:id` routes
 * would otherwise see `keys` as a device id.
 */
import type { AuthenticationResponseJSON } from "@simplewebauthn/server";
import { Hono } from "hono";
import { z } from "zod";
import {
  deviceIdSchema,
  deviceKeyOptionsBodySchema,
  deviceKeyRegisterBodySchema,
} from "../../sdk/src/private/contract";
import { requireAgentKey, requireFreshWeb, requireRole, requireSameOrigin, requireWeb } from "../auth";
import { relyingParty, validate } from "../http";
import { DECIDER_ROLES } from "../roles";
import {
  deviceKeyOptions,
  recipientsFor,
  registerDeviceKey,
  removeDeviceKey,
  teamDeviceKeys,
} from "../team/device-keys";
import type { AppEnv } from "../types";

const deviceKeyParam = z.object({ deviceId: deviceIdSchema });

export const deviceKeyRoutes = new Hono<AppEnv>()
  .use("/v1/devices/keys", requireWeb, requireSameOrigin)
  .use("/v1/devices/keys/*", requireWeb, requireSameOrigin)
  .get("/v1/devices/keys", async (c) => c.json({ keys: await teamDeviceKeys(c.env, c.get("web")) }))
  // Registering lets a browser read requests: the role as D1 has it now.
  .post(
    "/v1/devices/keys/options",
    requireFreshWeb,
    requireRole(...DECIDER_ROLES),
    validate("json", deviceKeyOptionsBodySchema),
    async (c) => c.json(await deviceKeyOptions(c.env, relyingParty(c), c.get("web"), c.req.valid("json").publicKey)),
  )
  .post(
    "/v1/devices/keys",
    requireFreshWeb,
    requireRole(...DECIDER_ROLES),
    validate("json", deviceKeyRegisterBodySchema),
    async (c) => {
      const body = c.req.valid("json");
      const key = await registerDeviceKey(c.env, relyingParty(c), c.get("web"), {
        ...body,
        assertion: body.assertion as unknown as AuthenticationResponseJSON,
      });
      return c.json({ key }, 201);
    },
  )
  .delete("/v1/devices/keys/:deviceId", requireFreshWeb, validate("param", deviceKeyParam), async (c) => {
    await removeDeviceKey(c.env, c.get("web"), c.req.valid("param").deviceId);
    return c.json({ ok: true });
  })
  .get("/v1/agent/recipients", requireAgentKey, async (c) =>
    c.json(await recipientsFor(c.env, relyingParty(c), c.get("agent"))),
  );
