/**
 * Device keys in workerd tests: a browser's key pair (as the PWA makes it), endorsed by its
 * person's passkey on the software authenticator and registered through the API, as the PWA does.
 */
import { env } from "cloudflare:test";
import type { PublicKeyCredentialRequestOptionsJSON } from "@simplewebauthn/server";
import { expect } from "vitest";
import { deviceKeySchema } from "../../sdk/src/private/contract";
import { newDeviceKeyPair } from "../../sdk/src/private/envelope";
import { newId, randomToken, sha256Hex } from "../../worker/crypto";
import type { Tweaks } from "./authenticator";
import { api, json, type Member } from "./helpers";
import type { Approver } from "./team-helpers";

/** `POST /v1/devices/keys/options` for `publicKey`. */
export const deviceKeyOptions = (m: Member, publicKey: string) =>
  api("/v1/devices/keys/options", { method: "POST", cookie: m.cookie, body: JSON.stringify({ publicKey }) });

/** The member's passkey assertion over the options the server gives for `publicKey`. */
export async function endorse(m: Approver, publicKey: string, tweaks: Tweaks = {}) {
  const answer = await deviceKeyOptions(m, publicKey);
  expect(answer.status).toBe(200);
  const { options } = await json<{ options: PublicKeyCredentialRequestOptionsJSON }>(answer);
  return m.authenticator.assert(options, tweaks);
}

/** `POST /v1/devices/keys` with `assertion` (by default, the member's own over this key). */
export const postDeviceKey = (
  m: Member,
  body: { publicKey: string; name?: string; pushDeviceId?: string; assertion: unknown },
) =>
  api("/v1/devices/keys", {
    method: "POST",
    cookie: m.cookie,
    body: JSON.stringify({ name: "Ada's phone", ...body }),
  });

/** A new browser key of `m`, registered (201) with their passkey; `cookie` picks the sign-in it registers from. */
export async function registerDeviceKey(m: Approver, o: { name?: string; pushDeviceId?: string } = {}) {
  const { publicKey, deviceId, keyPair } = await newDeviceKeyPair();
  const assertion = await endorse(m, publicKey);
  const response = await postDeviceKey(m, { publicKey, assertion, ...o });
  expect(response.status).toBe(201);
  const { key } = await json<{ key: unknown }>(response);
  return { publicKey, deviceId, keyPair, key: deviceKeySchema.parse(key) };
}

/** The team's device keys, as `m` lists them. */
export async function listDeviceKeys(m: Member) {
  const response = await api("/v1/devices/keys", { cookie: m.cookie });
  expect(response.status).toBe(200);
  return (await json<{ keys: unknown[] }>(response)).keys.map((k) => deviceKeySchema.parse(k));
}

/** Another signed-in browser of the same person (its own web session), made in D1 as a sign-in would. */
export async function anotherBrowser<M extends Member>(m: M): Promise<M & { sessionId: string }> {
  const token = randomToken();
  const sessionId = newId("wss");
  const now = Date.now();
  await env.DB.prepare(
    `INSERT INTO web_sessions (token_hash, id, user_id, team_id, method, created_at, signed_in_at, expires_at,
                               last_seen_at)
     VALUES (?1, ?2, ?3, ?4, 'test', ?5, ?5, ?6, ?5)`,
  )
    .bind(sha256Hex(token), sessionId, m.userId, m.teamId, now, now + 86_400_000)
    .run();
  return { ...m, cookie: `__Host-tapgate=${token}`, sessionId };
}
