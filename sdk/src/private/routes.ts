/**
 * The answers of the device-key routes (docs/human-api.md "Device keys"), which contract.ts
 * leaves out: the WebAuthn options a person's passkey signs to endorse a key, and the list of
 * the person's keys in the team. Environment-neutral.
 */
import { z } from "zod";
import { deviceKeySchema } from "./contract.js";

/**
 * `POST /v1/devices/keys/options`: WebAuthn request options whose challenge is
 * `deviceKeyChallenge(teamId, publicKey)` (the browser checks it before the passkey signs).
 */
export const deviceKeyOptionsAnswerSchema = z.object({
  options: z.looseObject({ challenge: z.string() }),
});

/** `GET /v1/devices/keys`: the device keys of the caller's team. */
export const deviceKeyListSchema = z.object({ keys: z.array(deviceKeySchema) });
export type DeviceKeyList = z.infer<typeof deviceKeyListSchema>;
