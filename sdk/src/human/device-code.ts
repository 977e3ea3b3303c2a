/**
 * `tapgate login`: the device authorization grant (RFC 8628). The terminal asks for a code and
 * polls `/v1/device/token`; a signed-in person approves the code in a browser (`/v1/device/:userCode`).
 */
import { z } from "zod";

export const DEVICE_CODE_STATUSES = ["pending", "approved", "denied", "consumed"] as const;
export const deviceCodeStatusSchema = z.enum(DEVICE_CODE_STATUSES);
export type DeviceCodeStatus = z.infer<typeof deviceCodeStatusSchema>;

/** Consonants only (RFC 8628 §6.1): nothing to misread (0/O, 1/I) and no words spelled by chance. */
export const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
export const USER_CODE_LENGTH = 8;

/** Typed codes arrive in any case, with or without the dash or spaces. */
export const userCodeSchema = z
  .string()
  .max(20)
  .transform((s) => s.replace(/[\s-]/g, "").toUpperCase())
  .pipe(z.string().regex(new RegExp(`^[${USER_CODE_ALPHABET}]{${USER_CODE_LENGTH}}$`), "not a device code"));
export const userCodeParamSchema = z.object({ userCode: userCodeSchema });

/** `POST /v1/device/code`. */
export const deviceCodeBodySchema = z.object({
  // It becomes the key's label and is shown to approvers: no control characters.
  clientName: z
    .string()
    .trim()
    .min(1)
    .max(100)
    .regex(/^[^\p{Cc}]*$/u, "no control characters")
    .optional(),
});
export const deviceCodeAnswerSchema = z.object({
  deviceCode: z.string(),
  userCode: z.string(),
  verificationUri: z.string(),
  verificationUriComplete: z.string(),
  expiresIn: z.number(),
  interval: z.number(),
});
export type DeviceCodeAnswer = z.infer<typeof deviceCodeAnswerSchema>;

/** `POST /v1/device/token`: pending, slow_down, expired and denied are error answers (400). */
export const deviceTokenBodySchema = z.object({ deviceCode: z.string().min(20).max(100) });
export const deviceTokenAnswerSchema = z.object({
  key: z.string(),
  keyId: z.string(),
  prefix: z.string(),
  team: z.object({ id: z.string(), name: z.string() }),
  user: z.object({ id: z.string(), name: z.string(), email: z.string() }),
});
export type DeviceTokenAnswer = z.infer<typeof deviceTokenAnswerSchema>;

/** `GET /v1/device/:userCode` and `POST …/approve|deny`: the code as the approver sees it. */
export const deviceCodeInfoSchema = z.object({
  userCode: z.string(),
  /** What the terminal calls itself (its host name): the requester's words, not verified. */
  clientName: z.string(),
  /** Where the code was asked from, coarsely: `203.0.113.0/24` or `2001:db8:1::/48`, and `NL`; null when unknown. */
  requestedFrom: z.object({ network: z.string().nullable(), country: z.string().nullable() }),
  createdAt: z.number(),
  expiresAt: z.number(),
  status: deviceCodeStatusSchema,
});
export type DeviceCodeInfo = z.infer<typeof deviceCodeInfoSchema>;
