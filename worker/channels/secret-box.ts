/**
 * Sealing the tokens a team connects (a Slack bot token, a PagerDuty routing key) before they
 * reach D1, under the deployment's `CHANNEL_SECRET_KEY` (`worker/sealing.ts`: AES-256-GCM, HKDF),
 * with a `context` (e.g. `${teamId}:slack`) bound in, so a sealed value copied to another team or
 * channel does not open.
 *
 * Format: `v1.<iv>.<ciphertext+tag>`. Owns: the format and the key it uses. Does not own where
 * sealed values are stored (`worker/db/channels.ts`).
 */
import { seal, sealingKey, unseal } from "../sealing";
import type { Env } from "../types";

const VERSION = "v1";

function channelKey(env: Env): Promise<CryptoKey> {
  const secret = env.CHANNEL_SECRET_KEY;
  if (!secret) throw new Error("CHANNEL_SECRET_KEY is not set");
  return sealingKey(secret, "tapgate channel secrets");
}

export async function sealSecret(env: Env, plaintext: string, context: string): Promise<string> {
  return `${VERSION}.${await seal(await channelKey(env), plaintext, context)}`;
}

/** The plaintext; throws on another version, another context, another key or any tampering. */
export async function openSecret(env: Env, sealed: string, context: string): Promise<string> {
  const [version, ...rest] = sealed.split(".");
  if (version !== VERSION) throw new Error("not a sealed secret");
  return unseal(await channelKey(env), rest.join("."), context);
}
