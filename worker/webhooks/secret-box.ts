/**
 * A webhook's signing secret at rest. The Worker must sign with it, so a hash would not do: it is
 * sealed with AES-256-GCM under a key derived (HKDF-SHA256) from a deployment secret, and the
 * row it belongs to (team and endpoint) is the additional data, so a sealed value copied to
 * another row does not open. The key is `CHANNEL_SECRET_KEY` (the key for stored channel
 * tokens) when set, else `RATE_LIMIT_SECRET`, else `VAPID_PRIVATE_KEY`; the sealed value names
 * which, so adding `CHANNEL_SECRET_KEY` later leaves older secrets readable (docs/threat-model.md).
 *
 * Owns: making a secret (`whsec_` + 32 random bytes, base64, as Standard Webhooks), sealing and
 * opening it. Does not own: where it is stored (`db/webhooks.ts`) or signing (`deliveries.ts`).
 */
import { seal, sealingKey, unseal } from "../sealing";
import type { Env } from "../types";

const KEY_SOURCES = ["CHANNEL_SECRET_KEY", "RATE_LIMIT_SECRET", "VAPID_PRIVATE_KEY"] as const;
type KeySource = (typeof KEY_SOURCES)[number];
const VERSION = "v1";

/** A new signing secret: `whsec_` and 32 random bytes in base64 (the key a receiver verifies with). */
export function newWebhookSecret(): string {
  return `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))}`;
}

/** The deployment secret a new seal uses; null when the server has none (no webhooks then). */
export function sealingSource(env: Env): KeySource | null {
  return KEY_SOURCES.find((name) => (env[name]?.length ?? 0) > 0) ?? null;
}

const keyOf = (env: Env, source: KeySource) => {
  const material = env[source];
  return material ? sealingKey(material, "tapgate webhooks") : null;
};
const rowOf = (teamId: string, endpointId: string) => `${teamId}/${endpointId}`;

/** `v1.<source>.<iv>.<ciphertext>`; throws when the server has no key (callers check `sealingSource` first). */
export async function sealSecret(env: Env, teamId: string, endpointId: string, secret: string): Promise<string> {
  const source = sealingSource(env);
  const key = source && (await keyOf(env, source));
  if (!source || !key) throw new Error("no deployment secret to seal webhook secrets with");
  return [VERSION, source, await seal(key, secret, rowOf(teamId, endpointId))].join(".");
}

/** The secret, or null when it cannot be opened (its key is gone or changed, or the row is not its own). */
export async function openSecret(env: Env, teamId: string, endpointId: string, sealed: string): Promise<string | null> {
  const [version, source, ...rest] = sealed.split(".");
  if (version !== VERSION || !KEY_SOURCES.includes(source as KeySource)) return null;
  const key = await keyOf(env, source as KeySource);
  if (!key) return null;
  try {
    return await unseal(key, rest.join("."), rowOf(teamId, endpointId));
  } catch {
    return null;
  }
}
