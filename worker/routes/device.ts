/**
 * `tapgate login`: the device authorization grant (RFC 8628), over HTTP. The flow's rules live in
 * team/device-login.ts; this file reads the input and shapes the answers.
 */
import { type Context, Hono } from "hono";
import {
  type DeviceCodeInfo,
  deviceCodeBodySchema,
  deviceTokenBodySchema,
  userCodeParamSchema,
} from "../../sdk/src/human/device-code";
import { requireSameOrigin, requireWeb } from "../auth";
import type { DeviceCode } from "../db";
import { appOrigin, validate } from "../http";
import {
  CODE_TTL_MS,
  decideCode,
  exchangeCode,
  findCode,
  POLL_INTERVAL_S,
  startDeviceLogin,
} from "../team/device-login";
import type { AppEnv } from "../types";

export const deviceRoutes = new Hono<AppEnv>()
  .post("/v1/device/code", validate("json", deviceCodeBodySchema), async (c) => {
    const started = await startDeviceLogin(c.env, {
      clientName: c.req.valid("json").clientName ?? "tapgate login",
      ip: c.req.header("CF-Connecting-IP"),
      country: c.req.raw.cf?.country,
    });
    return c.json(codeAnswer(c, started.deviceCode, started.userCode));
  })
  .post("/v1/device/token", validate("json", deviceTokenBodySchema), async (c) => {
    c.header("Cache-Control", "no-store");
    return c.json(await exchangeCode(c.env, c.req.valid("json").deviceCode));
  })
  .get("/v1/device/:userCode", requireWeb, validate("param", userCodeParamSchema), async (c) =>
    c.json(describeCode(await findCode(c.env, c.get("web"), c.req.valid("param").userCode))),
  )
  .post(
    "/v1/device/:userCode/approve",
    requireWeb,
    requireSameOrigin,
    validate("param", userCodeParamSchema),
    async (c) => c.json(describeCode(await decideCode(c.env, c.get("web"), c.req.valid("param").userCode, "approved"))),
  )
  .post("/v1/device/:userCode/deny", requireWeb, requireSameOrigin, validate("param", userCodeParamSchema), async (c) =>
    c.json(describeCode(await decideCode(c.env, c.get("web"), c.req.valid("param").userCode, "denied"))),
  );

const displayCode = (code: string) => `${code.slice(0, 4)}-${code.slice(4)}`;

function codeAnswer(c: Context<AppEnv>, deviceCode: string, code: string) {
  const verificationUri = `${appOrigin(c)}/device`;
  return {
    deviceCode,
    userCode: displayCode(code),
    verificationUri,
    verificationUriComplete: `${verificationUri}?code=${displayCode(code)}`,
    expiresIn: CODE_TTL_MS / 1000,
    interval: POLL_INTERVAL_S,
  };
}

function describeCode(code: DeviceCode) {
  const { userCode, clientName, clientNetwork, clientCountry, createdAt, expiresAt, status } = code;
  return {
    userCode: displayCode(userCode),
    clientName,
    requestedFrom: { network: clientNetwork, country: clientCountry },
    createdAt,
    expiresAt,
    status,
  } satisfies DeviceCodeInfo;
}
