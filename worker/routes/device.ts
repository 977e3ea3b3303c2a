/**
 * `tapgate login`: the device authorization grant (RFC 8628). The terminal asks for a code and
 * polls; a signed-in person approves the code in a browser; the next poll creates the API key,
 * in the approver's team, and hands it over once.
 */
import { type Context, Hono } from "hono";
import {
  type DeviceCodeAnswer,
  type DeviceCodeInfo,
  type DeviceTokenAnswer,
  deviceCodeBodySchema,
  deviceTokenBodySchema,
  USER_CODE_ALPHABET,
  USER_CODE_LENGTH,
  userCodeParamSchema,
} from "../../sdk/src/human/device-code";
import { requireSameOrigin, requireWeb } from "../auth";
import { hmacSha256Hex, newApiKey, newId, newSecret, randomString, sha256Hex } from "../crypto";
import {
  audit,
  createDeviceCode,
  type DeviceCode,
  type DeviceExchange,
  decideDeviceCode,
  exchangeDeviceCode,
  findDeviceCode,
  lookupDeviceCode,
} from "../db";
import { apiError, appOrigin, validate } from "../http";
import type { AppEnv, Env } from "../types";

const CODE_TTL_MS = 10 * 60 * 1000;
const POLL_INTERVAL_S = 2;
/** A Worker's clock only moves between I/O, so a client that waits the full interval can look early. */
const POLL_SLACK_MS = 250;
const CODES_PER_IP = 10;
const CODES_WINDOW_MS = 10 * 60 * 1000;
/** Wrong codes a signed-in person may type (or script) per window before lookups answer 429. */
const MISSES_PER_USER = 10;
const MISSES_WINDOW_MS = 10 * 60 * 1000;

const TOKEN_MESSAGES: Record<Exclude<DeviceExchange["outcome"], "issued">, string> = {
  authorization_pending: "waiting for someone to approve the code",
  slow_down: `polling too fast: wait at least ${POLL_INTERVAL_S} s between polls`,
  expired_token: "this code is unknown, expired or already used; start again",
  access_denied: "the code was denied",
};

export const deviceRoutes = new Hono<AppEnv>()
  .post("/v1/device/code", validate("json", deviceCodeBodySchema), async (c) => {
    const clientName = c.req.valid("json").clientName ?? "tapgate login";
    const deviceCode = newSecret();
    const now = Date.now();
    const ipHash = hmacSha256Hex(
      rateLimitSecret(c.env),
      `device-code-ip:${c.req.header("CF-Connecting-IP") ?? "unknown"}`,
    );
    // A taken user code is rare (20^8 codes); a few fresh draws settle it.
    for (let attempt = 0; attempt < 3; attempt++) {
      const code = randomString(USER_CODE_ALPHABET, USER_CODE_LENGTH);
      const created = await createDeviceCode(c.env.DB, {
        id: newId("dev"),
        deviceCodeHash: deviceCode.hash,
        userCode: code,
        clientName,
        ipHash,
        now,
        ttlMs: CODE_TTL_MS,
        limit: CODES_PER_IP,
        windowMs: CODES_WINDOW_MS,
      });
      if (created.created) return c.json(codeAnswer(c, deviceCode.token, code));
      if (created.retryAfterMs !== null) {
        return rateLimited(c, created.retryAfterMs, "too many sign-in codes from this address; try again later");
      }
    }
    throw new Error("no free user code after 3 draws");
  })
  .post("/v1/device/token", validate("json", deviceTokenBodySchema), async (c) => {
    c.header("Cache-Control", "no-store");
    const { key, prefix, hash } = newApiKey();
    const keyId = newId("key");
    const now = Date.now();
    const result = await exchangeDeviceCode(c.env.DB, {
      deviceCodeHash: sha256Hex(c.req.valid("json").deviceCode),
      key: { id: keyId, hash, prefix },
      now,
      minIntervalMs: POLL_INTERVAL_S * 1000 - POLL_SLACK_MS,
    });
    if (result.outcome !== "issued") return apiError(c, result.outcome, TOKEN_MESSAGES[result.outcome]);
    await audit(c.env, {
      eventId: `key_created:${keyId}`,
      teamId: result.team.id,
      at: now,
      actor: `user:${result.user.id}`,
      action: "key.created",
      subject: keyId,
      detail: { label: result.clientName, prefix, via: "device_code" },
    });
    return c.json({ key, keyId, prefix, team: result.team, user: result.user } satisfies DeviceTokenAnswer);
  })
  .get("/v1/device/:userCode", requireWeb, validate("param", userCodeParamSchema), async (c) => {
    const code = await lookup(c, c.req.valid("param").userCode, Date.now());
    return code instanceof Response ? code : c.json(describeCode(code));
  })
  .post("/v1/device/:userCode/approve", requireWeb, requireSameOrigin, validate("param", userCodeParamSchema), (c) =>
    decide(c, c.req.valid("param").userCode, "approved"),
  )
  .post("/v1/device/:userCode/deny", requireWeb, requireSameOrigin, validate("param", userCodeParamSchema), (c) =>
    decide(c, c.req.valid("param").userCode, "denied"),
  );

const displayCode = (code: string) => `${code.slice(0, 4)}-${code.slice(4)}`;

function codeAnswer(c: Context<AppEnv>, deviceCode: string, code: string): DeviceCodeAnswer {
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

function describeCode(code: DeviceCode): DeviceCodeInfo {
  const { userCode, clientName, createdAt, expiresAt, status } = code;
  return { userCode: displayCode(userCode), clientName, createdAt, expiresAt, status };
}

const unknownCode = (c: Context<AppEnv>) =>
  apiError(c, "not_found", "no such code, or it expired: run `tapgate login` again for a new one");

function rateLimited(c: Context<AppEnv>, retryAfterMs: number, message: string) {
  c.header("Retry-After", String(Math.max(1, Math.ceil(retryAfterMs / 1000))));
  return apiError(c, "rate_limited", message);
}

/**
 * The code the signed-in person typed, or the answer to give instead: 404 for a code they may not
 * see, 429 once they have missed too many (a pending code is open to anyone signed in, so
 * guessing is limited per person).
 */
async function lookup(c: Context<AppEnv>, userCode: string, now: number): Promise<DeviceCode | Response> {
  const web = c.get("web");
  const found = await lookupDeviceCode(c.env.DB, {
    userCode,
    userId: web.userId,
    teamId: web.teamId,
    now,
    limit: MISSES_PER_USER,
    windowMs: MISSES_WINDOW_MS,
  });
  if (found.outcome === "limited") {
    return rateLimited(c, found.retryAfterMs, "too many unknown codes; wait a few minutes and check the code");
  }
  return found.outcome === "found" ? found.code : unknownCode(c);
}

function alreadyDecided(c: Context<AppEnv>, code: DeviceCode) {
  const was = code.status === "denied" ? "denied" : "approved";
  return apiError(c, "already_decided", `this code was already ${was}`, { status: code.status });
}

async function decide(c: Context<AppEnv>, userCode: string, decision: "approved" | "denied") {
  const web = c.get("web");
  const now = Date.now();
  const found = await lookup(c, userCode, now);
  if (found instanceof Response) return found;
  if (found.status !== "pending") return alreadyDecided(c, found);
  const decided = await decideDeviceCode(c.env.DB, {
    userCode,
    decision,
    userId: web.userId,
    teamId: web.teamId,
    now,
  });
  if (!decided) {
    // Someone else decided it (or it expired) since the lookup.
    const current = await findDeviceCode(c.env.DB, { userCode, teamId: web.teamId, now });
    return current ? alreadyDecided(c, current) : unknownCode(c);
  }
  await audit(c.env, {
    eventId: `device_${decision}:${decided.id}`,
    teamId: web.teamId,
    at: now,
    actor: `user:${web.userId}`,
    action: `device.${decision}`,
    subject: decided.id,
    detail: { clientName: decided.clientName },
  });
  return c.json(describeCode(decided));
}

/**
 * The key of the per-IP rate limit's hash: a secret, so a leaked database does not give away
 * addresses (IPv4 is small enough to hash every one). Without RATE_LIMIT_SECRET each isolate makes
 * its own, so the limit still holds per isolate, and says so once.
 */
let isolateSecret: string | undefined;
function rateLimitSecret(env: Env): string {
  if (env.RATE_LIMIT_SECRET) return env.RATE_LIMIT_SECRET;
  if (!isolateSecret) {
    isolateSecret = newSecret().token;
    console.warn(
      "RATE_LIMIT_SECRET is not set: rate limits use a per-isolate key (wrangler secret put RATE_LIMIT_SECRET)",
    );
  }
  return isolateSecret;
}
