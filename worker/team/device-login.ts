/**
 * `tapgate login` as use cases: the device authorization grant (RFC 8628). The terminal asks for
 * a code and polls; a signed-in person approves the code in a browser; the next poll creates the
 * API key, in the approver's team, and hands it over once.
 *
 * Owns: code lifetimes, polling pace, rate limits (per IP for new codes, per person for wrong
 * codes), and auditing decisions and the key made. Does not own: the SQL
 * (`db/device-codes.ts`), the answers' wording for humans (`routes/device.ts`).
 */
import { USER_CODE_ALPHABET, USER_CODE_LENGTH } from "../../sdk/src/human/device-code";
import { ceilingsOf } from "../ceilings";
import { coarseNetwork, countryCode } from "../coarse-address";
import { hmacSha256Hex, newApiKey, newId, newSecret, randomString, sha256Hex } from "../crypto";
import {
  createDeviceCode,
  type DeviceCode,
  type DeviceExchange,
  decideDeviceCode,
  exchangeDeviceCode,
  findDeviceCode,
  lookupDeviceCode,
} from "../db";
import { DomainError } from "../errors";
import { rateLimited, rateLimitSecret } from "../rate-limits";
import type { Env, WebIdentity } from "../types";
import { chainQueued } from "./audit";
import { auditEvents, userActor } from "./audit-events";
import { keysOverCeiling } from "./keys";

export const CODE_TTL_MS = 10 * 60 * 1000;
export const POLL_INTERVAL_S = 2;
/** A Worker's clock only moves between I/O, so a client that waits the full interval can look early. */
const POLL_SLACK_MS = 250;
const CODES_PER_IP = 10;
const CODES_WINDOW_MS = 10 * 60 * 1000;
/** Wrong codes a signed-in person may type (or script) per window before lookups answer 429. */
const MISSES_PER_USER = 10;
const MISSES_WINDOW_MS = 10 * 60 * 1000;

const TOKEN_MESSAGES: Record<Exclude<DeviceExchange["outcome"], "issued" | "over_ceiling">, string> = {
  authorization_pending: "waiting for someone to approve the code",
  slow_down: `polling too fast: wait at least ${POLL_INTERVAL_S} s between polls`,
  expired_token: "this code is unknown, expired or already used; start again",
  access_denied: "the code was denied",
};

const unknownCode = () =>
  new DomainError("not_found", "no such code, or it expired: run `tapgate login` again for a new one");

const alreadyDecided = (code: DeviceCode) =>
  new DomainError("already_decided", `this code was already ${code.status === "denied" ? "denied" : "approved"}`, {
    extra: { status: code.status },
  });

/**
 * A new code for a terminal: the secret it polls with and the code a person types. The code keeps
 * only a coarse trace of where it was asked from (the network and country), for the approver.
 */
export async function startDeviceLogin(
  env: Env,
  s: { clientName: string; ip: string | undefined; country: unknown },
): Promise<{ deviceCode: string; userCode: string }> {
  const deviceCode = newSecret();
  const now = Date.now();
  const ipHash = hmacSha256Hex(rateLimitSecret(env), `device-code-ip:${s.ip ?? "unknown"}`);
  // A taken user code is rare (20^8 codes); a few fresh draws settle it.
  for (let attempt = 0; attempt < 3; attempt++) {
    const userCode = randomString(USER_CODE_ALPHABET, USER_CODE_LENGTH);
    const created = await createDeviceCode(env.DB, {
      id: newId("dev"),
      deviceCodeHash: deviceCode.hash,
      userCode,
      clientName: s.clientName,
      clientNetwork: coarseNetwork(s.ip),
      clientCountry: countryCode(s.country),
      ipHash,
      now,
      ttlMs: CODE_TTL_MS,
      limit: CODES_PER_IP,
      windowMs: CODES_WINDOW_MS,
    });
    if (created.created) return { deviceCode: deviceCode.token, userCode };
    if (created.retryAfterMs !== null) {
      throw rateLimited(created.retryAfterMs, "too many sign-in codes from this address; try again later");
    }
  }
  throw new Error("no free user code after 3 draws");
}

/**
 * The terminal's poll: the key once the code is approved (made now, audited in the approver's
 * team), else the RFC 8628 error for where the code stands.
 */
export async function exchangeCode(env: Env, deviceCode: string) {
  const { key, prefix, hash } = newApiKey();
  const keyId = newId("key");
  const now = Date.now();
  const result = await exchangeDeviceCode(
    env.DB,
    {
      deviceCodeHash: sha256Hex(deviceCode),
      key: { id: keyId, hash, prefix },
      now,
      minIntervalMs: POLL_INTERVAL_S * 1000 - POLL_SLACK_MS,
      keyCeiling: ceilingsOf(env).keysPerTeam,
    },
    (approved) =>
      auditEvents.keyCreated(
        { teamId: approved.teamId, actor: userActor(approved.userId), at: now },
        { keyId, label: approved.clientName, prefix, via: "device_code" },
      ),
  );
  if (result.outcome === "over_ceiling") throw keysOverCeiling(ceilingsOf(env).keysPerTeam);
  if (result.outcome !== "issued") throw new DomainError(result.outcome, TOKEN_MESSAGES[result.outcome]);
  await chainQueued(env, result.team.id);
  return { key, keyId, prefix, team: result.team, user: result.user };
}

/**
 * The code the signed-in person typed: 404 for a code they may not see, 429 once they have
 * missed too many (a pending code is open to anyone signed in, so guessing is limited per person).
 */
export async function findCode(env: Env, web: WebIdentity, userCode: string, now = Date.now()): Promise<DeviceCode> {
  const found = await lookupDeviceCode(env.DB, {
    userCode,
    userId: web.userId,
    teamId: web.teamId,
    now,
    limit: MISSES_PER_USER,
    windowMs: MISSES_WINDOW_MS,
  });
  if (found.outcome === "limited") {
    throw rateLimited(found.retryAfterMs, "too many unknown codes; wait a few minutes and check the code");
  }
  if (found.outcome !== "found") throw unknownCode();
  return found.code;
}

/** Approves or denies a pending code for the person's team (409 once it is decided). */
export async function decideCode(
  env: Env,
  web: WebIdentity,
  userCode: string,
  decision: "approved" | "denied",
): Promise<DeviceCode> {
  const now = Date.now();
  const found = await findCode(env, web, userCode, now);
  if (found.status !== "pending") throw alreadyDecided(found);
  const decided = await decideDeviceCode(
    env.DB,
    { id: found.id, userCode, decision, userId: web.userId, teamId: web.teamId, now },
    auditEvents.deviceCodeDecided(
      { teamId: web.teamId, actor: userActor(web.userId), at: now },
      { codeId: found.id, decision, clientName: found.clientName },
    ),
  );
  if (!decided) {
    // Someone else decided it (or it expired) since the lookup.
    const current = await findDeviceCode(env.DB, { userCode, teamId: web.teamId, now });
    throw current ? alreadyDecided(current) : unknownCode();
  }
  await chainQueued(env, web.teamId);
  return decided;
}
